"""RNNStepper: the timesteps of one recurrent op, one step scope at a time, live or from a record.

Live, over a kc.DebugSession that has not finished: "next" runs the session to the next timestep
(`session.step_timestep()`), "prev" and "goto" to a timestep already run rebuild it from the session's
trace (time travel, `session.goto`): no kernel runs again. Replay, over a finished session or a Trace
recorded with values (`kc.trace(retain="references")`): every timestep is rebuilt from the record.

The variables of a step scope get roles from the recurrent op's attributes: `inputs` (x_t, the slice of
each sequence), `ex_states` (h_prev, the memory the step reads), `states` (h_new, the memory it leaves
for the next step) and `outputs` (output, stacked over time outside). The recurrent op binds x_t and
h_prev with var_create events that carry the values, so a rebuilt step scope holds them too.

Paddle's fused `rnn` op (paddle.nn.LSTM / GRU / SimpleRNN) is stepped the same way: it has no sub-block but
runs each (layer, direction, timestep) in its own step scope, binding `x_proj` (role x_t), `h_prev` and
`c_prev` (h_prev) and writing `h` and `c` (h_new; `h` is also the output at t) and `gates` (no role). With
several layers or directions the op runs one pass per (layer, direction), each over every timestep; the
stepper shows the latest pass that ran (the status names it), in its own order (a backward pass runs
from T-1 down to 0).
"""
from __future__ import annotations

import re

import traitlets as t

import kernelcore as kc

from ._base import STATIC, KCWidget
from .schema import scope_json

RECURRENT = "recurrent"
FUSED_RNN = "rnn"
STEPPED = (RECURRENT, FUSED_RNN)  # op types whose timesteps the stepper shows
# the step-scope names of the fused rnn op (kernelcore/ops/rnn.py) by role
FUSED_ROLES = {"inputs": ["x_proj"], "ex_states": ["h_prev", "c_prev"], "states": ["h", "c"], "outputs": ["h"]}
_OP_ID = re.compile(r"o(\d+):(\d+)\Z")


class _TraceRecord:
    """What kc.TimeView needs of a session, made from a bare Trace: the run's scope (no values from
    before the run: feeds and parameters are unknown unless an op wrote them) and the events."""

    def __init__(self, trace: kc.Trace, first_event: int):
        events = trace.events
        begin = next((i for i in range(first_event, -1, -1) if events[i].kind == "run_begin"), None)
        if begin is None:
            raise ValueError("the trace holds no run_begin event before the recurrent op's steps")
        self.trace = trace
        self._initial = [(events[begin].scope, {}, {})]
        self._initial_events = begin + 1


def _op_key(op, program) -> tuple[int, int] | None:
    if op is None:
        if program is None:
            return None
        for b in program.blocks:
            for i, o in enumerate(b.desc.ops):
                if o.type in STEPPED:
                    return b.idx, i
        raise ValueError("the program has no recurrent op (a `recurrent` op: build one with kc.layers.StaticRNN; "
                         "or Paddle's fused `rnn` op: paddle.nn.LSTM/GRU/SimpleRNN)")
    if isinstance(op, kc.Operator):
        return op.block.idx, op.idx
    if isinstance(op, str):
        m = _OP_ID.match(op)
        if not m:
            raise ValueError(f"op={op!r}: expected an op id like 'o0:3'")
        return int(m.group(1)), int(m.group(2))
    if isinstance(op, int):
        return 0, op
    if isinstance(op, tuple) and len(op) == 2:
        return int(op[0]), int(op[1])
    raise TypeError(f"op= takes an Operator, an op id 'o<block>:<index>', an index or (block, index), "
                    f"got {type(op).__name__}")


class StepperState(t.HasTraits):
    """The RNNStepper traits and what Python answers to them (shared with the Debugger, one model)."""

    mode = t.Unicode("replay").tag(sync=True)       # "live" | "replay"
    num_steps = t.Int(0).tag(sync=True)             # 0: no recurrent op (the Debugger hides the panel)
    timestep = t.Int(-1).tag(sync=True)             # -1: no timestep shown (the op has not started)
    step_scope = t.Dict().tag(sync=True)            # ScopeJSON with previews and roles; {} when none
    memory_flow = t.List().tag(sync=True)           # [{t, from, to, from_t}]
    status = t.Unicode("").tag(sync=True)
    rnn_op = t.Unicode("").tag(sync=True)           # which recurrent op, "o<block>:<index>"

    def _init_stepper(self, session_or_trace, op=None, program=None) -> None:
        src = session_or_trace
        if isinstance(src, kc.DebugSession):
            self._rnn_session, self._rnn_record, program = src, src, src.program
        elif isinstance(src, kc.Trace):
            self._rnn_session, self._rnn_record = None, None
        else:
            raise TypeError(f"RNNStepper takes a kc.DebugSession or a kc.Trace, got {type(src).__name__}")
        self._rnn_trace = src.trace if isinstance(src, kc.DebugSession) else src
        self._rnn_program = program
        key = _op_key(op, program)
        if key is None:  # a bare trace without its program: the first recurrent op that ran
            ev = next((e for e in self._rnn_trace.events if e.kind == "step_begin" and e.op_type in STEPPED), None)
            if ev is None:
                raise ValueError("the trace holds no timestep of a recurrent op")
            key = (ev.block, ev.op)
        self._rnn_key = key
        self._rnn_names = self._rnn_role_names()
        self.rnn_op = f"o{key[0]}:{key[1]}"
        if self._rnn_record is None:
            first = next((i for i, e in enumerate(self._rnn_trace.events)
                          if e.kind == "step_begin" and (e.block, e.op) == key), None)
            if first is None:
                raise ValueError(f"the trace holds no timestep of op {self.rnn_op}")
            self._rnn_record = _TraceRecord(self._rnn_trace, first)
        self.refresh_steps()

    # -- what the op says -----------------------------------------------------------------------------
    def _rnn_role_names(self) -> dict:
        empty = {"inputs": [], "initial_states": [], "ex_states": [], "states": [], "outputs": [], "reverse": False,
                 "sequence": [], "fused": False}
        if self._rnn_program is None:
            return empty
        b, i = self._rnn_key
        try:
            op = self._rnn_program.block(b).op(i)
        except kc.KernelcoreError as e:
            raise ValueError(f"op o{b}:{i}: {e}") from None
        if op.type == FUSED_RNN:
            lstm = op.attr("mode", "LSTM") == "LSTM"
            n = 2 if lstm else 1
            return {**FUSED_ROLES, "ex_states": FUSED_ROLES["ex_states"][:n], "states": FUSED_ROLES["states"][:n],
                    "initial_states": op.input("PreState"), "reverse": False, "sequence": op.input("Input"),
                    "fused": True}
        if op.type != RECURRENT:
            raise ValueError(f"op o{b}:{i} is a {op.type!r} op, not a recurrent op")
        return {"inputs": op.input("inputs"), "initial_states": op.input("initial_states"),
                "ex_states": list(op.attr("ex_states", [])), "states": list(op.attr("states", [])),
                "outputs": op.output("outputs"), "reverse": bool(op.attr("reverse", False)),
                "sequence": op.input("inputs"), "fused": False}

    def _rnn_roles(self) -> dict[str, list[str]]:
        roles: dict[str, list[str]] = {}
        n = self._rnn_names
        for role, names in (("x_t", n["inputs"]), ("h_prev", n["ex_states"]), ("h_new", n["states"]),
                            ("output", n["outputs"])):
            for name in names:
                roles.setdefault(name, []).append(role)
        return roles

    @property
    def rnn_live(self) -> bool:
        return self._rnn_session is not None and not self._rnn_session.finished

    # -- where the record and the session are ----------------------------------------------------------
    def _rnn_completed(self) -> dict[int, tuple[int, int, int]]:
        """timestep -> (index of its step_end event, step scope id, position in execution order), for the
        op's latest run."""
        out: dict[int, tuple[int, int, int]] = {}
        order = 0
        self._rnn_pass = ""  # the fused rnn op: which (layer, direction) the latest pass is
        for i, e in enumerate(self._rnn_trace.events):
            if e.kind == "scope_push" and (e.block, e.op) == self._rnn_key and e.message:
                if e.message != self._rnn_pass and out:
                    out, order = {}, 0  # the fused rnn op starts its next (layer, direction) pass
                self._rnn_pass = e.message
            if e.kind in ("step_begin", "step_end") and (e.block, e.op) == self._rnn_key:
                if e.kind == "step_begin" and out and e.timestep in out:
                    out, order = {}, 0  # the op runs again (inside a loop): keep the latest run
                if e.kind == "step_end":
                    out[e.timestep] = (i, e.scope, order)
                    order += 1
        return out

    def _rnn_live_step(self) -> tuple[int, int, int] | None:
        """(timestep, step scope id, op scope id) when the session is paused inside the op."""
        if not self.rnn_live:
            return None
        frames = self._rnn_session.position.frames
        for d, f in enumerate(frames[:-1]):
            if (f.block, f.op) == self._rnn_key and frames[d + 1].timestep is not None:
                return frames[d + 1].timestep, frames[d + 1].scope, f.scope
        return None

    def _rnn_live_scope(self, scope_id: int):
        return next((s for s in self._rnn_session.scope.walk() if s.id == scope_id), None)

    def _rnn_num_steps(self, completed, live_step) -> int:
        names = self._rnn_names["sequence"] or self._rnn_names["inputs"]
        if self._rnn_session is not None and names:
            scope = None
            if live_step is not None:
                scope = self._rnn_live_scope(live_step[2])
            else:
                pos = self._rnn_session.position.innermost
                if pos is not None and (pos.block, pos.op) == self._rnn_key:
                    scope = self._rnn_live_scope(pos.scope)
            v = (scope or self._rnn_session.scope).find_var(names[0])
            shape = getattr(v.value, "shape", None) if v is not None else None
            if shape:
                return int(shape[0])
        if self._rnn_program is not None and names:
            v = self._rnn_program.block(self._rnn_key[0]).find_var_recursive(names[0])
            if v is not None and v.shape and v.shape[0] > 0:
                return int(v.shape[0])
        seen = set(completed) | ({live_step[0]} if live_step else set())
        return max(seen) + 1 if seen else 0

    def _rnn_exec_order(self, n: int) -> list[int]:
        reverse = self._rnn_names["reverse"] or "backward" in getattr(self, "_rnn_pass", "")
        return list(range(n - 1, -1, -1)) if reverse else list(range(n))

    # -- showing a timestep -----------------------------------------------------------------------------
    def refresh_steps(self) -> None:
        """Show the live timestep (or keep the shown one) after the session moved."""
        completed = self._rnn_completed()
        live_step = self._rnn_live_step()
        self.mode = "live" if self.rnn_live else "replay"
        self.num_steps = self._rnn_num_steps(completed, live_step)
        if live_step is not None:
            self._show_step(live_step[0], completed, live_step)
        elif completed:
            ran = sorted(completed, key=lambda ts: completed[ts][2])  # in execution order
            shown = self.timestep if self.timestep in completed else ran[-1] if self.rnn_live else ran[0]
            self._show_step(shown, completed, live_step)
        else:
            self.timestep, self.step_scope = -1, {}
            self.memory_flow = self._rnn_flow(completed, live_step)
            where = f", paused at {self._rnn_session.position}" if self.rnn_live else ""
            self.status = f"{self.mode}: op {self.rnn_op} has not started a timestep yet{where}"

    def _rnn_flow(self, completed, live_step) -> list[dict]:
        n = self._rnn_names
        steps = sorted(((k, tt) for tt, (_, _, k) in completed.items()))
        ran = [tt for _, tt in steps]
        if live_step is not None and live_step[0] not in completed:
            ran.append(live_step[0])
        flow = []
        for k, tt in enumerate(ran):
            for j, to in enumerate(n["ex_states"]):
                src = (n["initial_states"][j] if j < len(n["initial_states"]) else "") if k == 0 else n["states"][j]
                flow.append({"t": tt, "from": src, "to": to, "from_t": ran[k - 1] if k else None})
        return flow

    def _show_step(self, ts: int, completed, live_step) -> None:
        roles = self._rnn_roles()
        if ts in completed:
            index, scope_id, k = completed[ts]
            node = kc.TimeView(self._rnn_record, index).forest()[scope_id]  # x_t, h_prev: bound with their values
            body = scope_json(node, roles=roles)
            body["event"] = index
            status = f"{self.mode}: timestep {ts} ({k + 1} of {self.num_steps} run), rebuilt at event {index}"
        elif live_step is not None and live_step[0] == ts:
            scope = self._rnn_live_scope(live_step[1])
            body = scope_json(kc.ScopeForest(scope)[scope.id], roles=roles)
            status = f"live: timestep {ts} of {self.num_steps}, paused at {self._rnn_session.position}"
        else:
            self.status = f"{self.mode}: timestep {ts} has not run" + (" yet" if self.rnn_live else "")
            return
        if self._rnn_names.get("fused") and getattr(self, "_rnn_pass", ""):
            status += "; " + self._rnn_pass.removeprefix("rnn step ")  # "(layer 0, forward)"
        order = {"x_t": 0, "h_prev": 1, "h_new": 2, "output": 3}
        body["vars"].sort(key=lambda v: (order.get(v["role"], 9), v["name"]))
        self.timestep = ts
        self.step_scope = body
        self.memory_flow = self._rnn_flow(completed, live_step)
        self.status = status

    # -- moving -----------------------------------------------------------------------------------------
    def goto_timestep(self, ts: int):
        """Show timestep `ts`: rebuilt from the record if it has run; live, run the session up to it."""
        completed = self._rnn_completed()
        live_step = self._rnn_live_step()
        n = self._rnn_num_steps(completed, live_step)
        if not 0 <= ts < max(n, 1):
            self.status = f"there is no timestep {ts}: the op runs {n} timesteps (0 to {n - 1})"
            return self
        guard = n + 2
        while (ts not in completed and self.rnn_live and guard > 0
               and not (live_step is not None and live_step[0] == ts)):
            order = self._rnn_exec_order(n)
            if live_step is not None and order.index(live_step[0]) > order.index(ts):
                break  # behind the live step and not recorded: cannot happen unless the record dropped it
            try:
                self._rnn_session.step_timestep()
            except kc.KernelcoreError:
                pass  # the run failed: the session has ended, its stop_reason says why (below)
            guard -= 1
            completed, live_step = self._rnn_completed(), self._rnn_live_step()
            reason = self._rnn_session.stop_reason
            if reason.startswith("breakpoint") or reason.startswith("error"):
                break
        self.mode = "live" if self.rnn_live else "replay"
        self.num_steps = self._rnn_num_steps(completed, live_step)
        if ts not in completed and live_step is not None:
            ts = live_step[0]  # the run stopped short (a breakpoint): show where it is
        self._show_step(ts, completed, live_step)
        if self._rnn_session is not None and self._rnn_session.stop_reason.startswith(("breakpoint", "error")):
            self.status += f" ({self._rnn_session.stop_reason})"
        return self

    def next_timestep(self):
        order = self._rnn_exec_order(self.num_steps)
        if not order:
            self.status = "the op has no timesteps"
            return self
        if self.timestep not in order:
            return self.goto_timestep(order[0])
        k = order.index(self.timestep)
        if k + 1 >= len(order):
            self.status = f"timestep {self.timestep} is the last"
            return self
        return self.goto_timestep(order[k + 1])

    def prev_timestep(self):
        order = self._rnn_exec_order(self.num_steps)
        if self.timestep not in order or order.index(self.timestep) == 0:
            self.status = f"timestep {self.timestep} is the first" if self.timestep in order else "no timestep shown"
            return self
        return self.goto_timestep(order[order.index(self.timestep) - 1])

    # -- messages ---------------------------------------------------------------------------------------
    def _stepper_goto(self, content) -> None:
        ts = content.get("t")
        if isinstance(ts, int) and not isinstance(ts, bool):
            self.goto_timestep(ts)
        else:
            self.status = f"goto needs an integer t, got {ts!r:.40}"

    def _stepper_next(self, _content) -> None:
        self.next_timestep()

    def _stepper_prev(self, _content) -> None:
        self.prev_timestep()


class RNNStepper(StepperState, KCWidget):
    """`RNNStepper(session_or_trace, op=None, program=None)`: `op` picks the recurrent op (default: the
    program's first); `program` is needed only with a bare Trace, to name the roles. Messages:
    `{"type": "goto", "t": int}`, `{"type": "next"}`, `{"type": "prev"}`."""

    _esm = STATIC / "RNNStepper.js"
    _css = STATIC / "RNNStepper.css"

    def __init__(self, session_or_trace, op=None, program=None, **kw):
        super().__init__(**kw)
        self._init_stepper(session_or_trace, op, program)

    goto = StepperState.goto_timestep
    next = StepperState.next_timestep
    prev = StepperState.prev_timestep
    refresh = StepperState.refresh_steps

    def _messages(self) -> dict:
        return {"goto": self._stepper_goto, "next": self._stepper_next, "prev": self._stepper_prev}
