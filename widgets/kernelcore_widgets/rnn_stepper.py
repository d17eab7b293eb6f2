"""RNNStepper: the timesteps of one recurrent op, one step scope at a time, live or from a record.

A thin view over the engine: the session (kc.DebugSession) says where its cursor is (`position`, structured
frames), the recorded run (kc.RecordedRun: the session's `record`, or `kc.RecordedRun.from_trace(trace)`)
says which timesteps ran (`timesteps(block, op, upto)`) and rebuilds any of them (`view(index)`).
Over a session, the panel follows the session's cursor: the timestep the cursor is in, live when the cursor
is at the present (mode "live"), rebuilt when it is in the past (mode "replay"). "prev" and "goto" to a
timestep already run show it as it ended, rebuilt (mode "replay"); "next"/"goto" to a later one move the
session forward (`session.step_timestep()`).

The variables of a step scope get roles from the recurrent op's attributes: `inputs` (x_t, the slice of
each sequence), `ex_states` (h_prev, the memory the step reads), `states` (h_new, the memory it leaves
for the next step) and `outputs` (output, stacked over time outside).

Paddle's fused `rnn` op (paddle.nn.LSTM / GRU / SimpleRNN) is stepped the same way: it has no sub-block but
runs each (layer, direction, timestep) in its own step scope, binding `x_proj` (role x_t), `h_prev` and
`c_prev` (h_prev) and writing `h` and `c` (h_new; `h` is also the output at t) and `gates` (no role). With
several layers or directions the op runs one pass per (layer, direction), each over every timestep; the
stepper shows the latest pass that ran (the status names it), in its own order (a backward pass runs
from T-1 down to 0).
"""
from __future__ import annotations


import traitlets as t

import kernelcore as kc
from kernelcore.ir.node_ids import parse_node_id

from ._base import STATIC, KCWidget
from .schema import scope_json

RECURRENT = "recurrent"
FUSED_RNN = "rnn"
STEPPED = (RECURRENT, FUSED_RNN)  # op types whose timesteps the stepper shows
# the step-scope names of the fused rnn op (kernelcore/ops/rnn.py) by role
FUSED_ROLES = {"inputs": ["x_proj"], "ex_states": ["h_prev", "c_prev"], "states": ["h", "c"], "outputs": ["h"]}


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
        parsed = parse_node_id(op)
        if parsed is None or parsed[0] != "op":
            raise ValueError(f"op={op!r}: expected an op id like 'o0:3'")
        return parsed[1], parsed[2]
    if isinstance(op, int):
        return 0, op
    if isinstance(op, tuple) and len(op) == 2:
        return int(op[0]), int(op[1])
    raise TypeError(f"op= takes an Operator, an op id 'o<block>:<index>', an index or (block, index), "
                    f"got {type(op).__name__}")


class RNNStepper(KCWidget):
    """`RNNStepper(session_or_trace, op=None, program=None)`: `op` picks the recurrent op (default: the
    program's first); `program` is needed only with a bare Trace, to name the roles. Messages:
    `{"type": "goto", "t": int}`, `{"type": "next"}`, `{"type": "prev"}`."""

    _esm = STATIC / "RNNStepper.js"
    _css = STATIC / "RNNStepper.css"

    mode = t.Unicode("replay").tag(sync=True)       # "live" | "replay"
    num_steps = t.Int(0).tag(sync=True)             # 0: no recurrent op (the Debugger hides the panel)
    timestep = t.Int(-1).tag(sync=True)             # -1: no timestep shown (the op has not started)
    step_scope = t.Dict().tag(sync=True, ts="ScopeJSON | Record<string, never>")  # ScopeJSON with previews and roles; {} when none
    memory_flow = t.List().tag(sync=True, ts="MemoryFlowJSON[]")  # [{t, from, to, from_t}]
    status = t.Unicode("").tag(sync=True)
    rnn_op = t.Unicode("").tag(sync=True)           # which recurrent op, "o<block>:<index>"

    def _init_stepper(self, session_or_trace, op=None, program=None) -> None:
        src = session_or_trace
        if isinstance(src, kc.DebugSession):
            self._rnn_session, program = src, src.program
            trace = src.trace
        elif isinstance(src, kc.Trace):
            self._rnn_session, trace = None, src
        else:
            raise TypeError(f"RNNStepper takes a kc.DebugSession or a kc.Trace, got {type(src).__name__}")
        self._rnn_program = program
        key = _op_key(op, program)
        if key is None:  # a bare trace without its program: the first recurrent op that ran
            ev = next((e for e in trace.events if e.kind == "step_begin" and e.op_type in STEPPED), None)
            if ev is None:
                raise ValueError("the trace holds no timestep of a recurrent op")
            key = (ev.block, ev.op)
        self._rnn_key = key
        self._rnn_names = self._rnn_role_names()
        self.rnn_op = f"o{key[0]}:{key[1]}"
        if self._rnn_session is not None:
            self._rnn_record = self._rnn_session.record
        else:
            first = next((i for i, e in enumerate(trace.events)
                          if e.kind == "step_begin" and (e.block, e.op) == key), None)
            if first is None:
                raise ValueError(f"the trace holds no timestep of op {self.rnn_op}")
            self._rnn_record = kc.RecordedRun.from_trace(trace, program, near=first)
        self._rnn_pinned: int | None = None  # a timestep picked in the panel (shown as it ended)
        self.refresh_steps()
        completed = self._rnn_completed()
        if self._rnn_cursor_step() is None and completed:  # a finished record: replay from its first timestep
            self._show_step(min(completed, key=lambda ts: completed[ts][2]), completed)

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
            n = 2 if op.attr("mode", "LSTM") == "LSTM" else 1
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
        """The session's cursor is at the present of an unfinished run."""
        s = self._rnn_session
        return s is not None and not s.finished and s.at_present

    # -- where the record and the session are (the engine answers) ---------------------------------------
    def _rnn_upto(self) -> int | None:
        s = self._rnn_session
        return s.pauses[s.pause_index].index if s is not None else None

    def _rnn_completed(self) -> dict[int, tuple[int, int, int]]:
        """timestep -> (index of its step_end event, step scope id, position in execution order), as of the
        session's cursor (the whole record for a trace)."""
        steps = self._rnn_record.timesteps(*self._rnn_key, upto=self._rnn_upto())
        return {st.t: (st.end, st.scope, st.order) for st in steps if st.end is not None}

    def _rnn_cursor_step(self) -> tuple[int, int] | None:
        """(timestep, step scope id) when the session's cursor is inside the op."""
        if self._rnn_session is None:
            return None
        frames = self._rnn_session.position.frames
        for d, f in enumerate(frames[:-1]):
            if (f.block, f.op) == self._rnn_key and frames[d + 1].timestep is not None:
                return frames[d + 1].timestep, frames[d + 1].scope
        return None

    def _rnn_pass(self) -> str:
        """The fused rnn op: which (layer, direction) pass ran last as of the cursor ("" for recurrent)."""
        if not self._rnn_names.get("fused"):
            return ""
        events, upto = self._rnn_record.events, self._rnn_upto()
        last = len(events) - 1 if upto is None else upto
        return next((e.message for e in reversed(events[:last + 1]) if e.kind == "scope_push"
                     and (e.block, e.op) == self._rnn_key and e.message), "")

    def _rnn_num_steps(self, completed) -> int:
        names = self._rnn_names["sequence"] or self._rnn_names["inputs"]
        if self._rnn_session is not None and names:
            v = self._rnn_session.scope.find_var(names[0])
            shape = getattr(v.value, "shape", None) if v is not None else None
            if shape:
                return int(shape[0])
        if self._rnn_program is not None and names:
            v = self._rnn_program.block(self._rnn_key[0]).find_var_recursive(names[0])
            if v is not None and v.shape and v.shape[0] > 0:
                return int(v.shape[0])
        here = self._rnn_cursor_step()
        seen = set(completed) | ({here[0]} if here else set())
        return max(seen) + 1 if seen else 0

    def _rnn_exec_order(self, n: int) -> list[int]:
        reverse = self._rnn_names["reverse"] or "backward" in self._rnn_pass()
        return list(range(n - 1, -1, -1)) if reverse else list(range(n))

    # -- showing a timestep -----------------------------------------------------------------------------
    def refresh_steps(self) -> None:
        """Follow the session's cursor: the timestep it is in, else the last one finished before it."""
        self._rnn_pinned = None
        completed = self._rnn_completed()
        here = self._rnn_cursor_step()
        self.num_steps = self._rnn_num_steps(completed)
        if here is not None:
            self._show_cursor_step(here, completed)
        elif completed:
            ran = sorted(completed, key=lambda ts: completed[ts][2])  # in execution order
            shown = ran[-1] if self._rnn_session is not None else \
                (self.timestep if self.timestep in completed else ran[0])
            self._show_step(shown, completed)
        else:
            self.mode = "live" if self.rnn_live else "replay"
            self.timestep, self.step_scope = -1, {}
            self.memory_flow = self._rnn_flow(completed, None)
            where = f", paused at {self._rnn_session.position}" if self._rnn_session is not None else ""
            self.status = f"{self.mode}: op {self.rnn_op} has not started a timestep yet{where}"

    def _rnn_flow(self, completed, here) -> list[dict]:
        n = self._rnn_names
        steps = sorted(((k, tt) for tt, (_, _, k) in completed.items()))
        ran = [tt for _, tt in steps]
        if here is not None and here[0] not in completed:
            ran.append(here[0])
        flow = []
        for k, tt in enumerate(ran):
            for j, to in enumerate(n["ex_states"]):
                src = (n["initial_states"][j] if j < len(n["initial_states"]) else "") if k == 0 else n["states"][j]
                flow.append({"t": tt, "from": src, "to": to, "from_t": ran[k - 1] if k else None})
        return flow

    def _publish(self, ts: int, node, completed, here, status: str, pass_named: bool = False) -> None:
        """Show step scope `node`; the status names the fused rnn's pass unless it does already
        (`pass_named`: a position whose frame carries it, "lstm_cell layer 0 fwd")."""
        body = scope_json(node, roles=self._rnn_roles())
        order = {"x_t": 0, "h_prev": 1, "h_new": 2, "output": 3}
        body["vars"].sort(key=lambda v: (order.get(v["role"], 9), v["name"]))
        self.timestep = ts
        self.step_scope = body
        self.memory_flow = self._rnn_flow(completed, here)
        pass_name = "" if pass_named else self._rnn_pass()
        self.status = status + ("; " + pass_name.removeprefix("rnn step ") if pass_name else "")  # "(layer 0, forward)"

    def _show_cursor_step(self, here, completed) -> None:
        """The timestep the session's cursor is in: its live step scope at the present, rebuilt in the past."""
        ts, scope_id = here
        sess = self._rnn_session
        if sess.at_present:
            scope = next((x for x in sess.scope.walk() if x.id == scope_id), None)
            node = kc.ScopeForest(scope)[scope.id]
            self.mode = "live"
            status = f"live: timestep {ts} of {self.num_steps}, paused at {sess.position}"
        else:
            index = sess.pauses[sess.pause_index].index
            node = sess.view.forest()[scope_id]
            self.mode = "replay"
            status = f"replay: timestep {ts} of {self.num_steps} at {sess.position}, rebuilt at event {index}"
        named = any(f.detail for f in sess.position.frames)
        self._publish(ts, node, completed, here, status, pass_named=named)
        self.step_scope = {**self.step_scope, "event": sess.pauses[sess.pause_index].index}

    def _show_step(self, ts: int, completed) -> None:
        """A timestep that has finished, as it ended, rebuilt from the record."""
        if ts not in completed:
            self.status = f"{self.mode}: timestep {ts} has not run" + (" yet" if self.rnn_live else "")
            return
        index, scope_id, k = completed[ts]
        node = kc.TimeView(self._rnn_record, index).forest()[scope_id]  # x_t, h_prev: bound with their values
        self.mode = "replay"
        self._publish(ts, node, completed, self._rnn_cursor_step(),
                      f"replay: timestep {ts} ({k + 1} of {self.num_steps} run), rebuilt at event {index}")
        self.step_scope = {**self.step_scope, "event": index}

    # -- moving -----------------------------------------------------------------------------------------
    def goto_timestep(self, ts: int):
        """Show timestep `ts`: rebuilt from the record if it has run; else run the session up to it."""
        completed = self._rnn_completed()
        n = self._rnn_num_steps(completed)
        if not 0 <= ts < max(n, 1):
            self.status = f"there is no timestep {ts}: the op runs {n} timesteps (0 to {n - 1})"
            return self
        here = self._rnn_cursor_step()
        if here is not None and here[0] == ts:
            self.refresh_steps()
            return self
        if ts in completed:
            self._show_step(ts, completed)
            self._rnn_pinned = ts
            return self
        sess = self._rnn_session
        if sess is None or sess.finished and sess.at_present:
            self._show_step(ts, completed)
            return self
        order = self._rnn_exec_order(n)
        guard = n + 2
        while guard > 0 and not (sess.finished and sess.at_present):
            here = self._rnn_cursor_step()
            if here is not None and (here[0] == ts or order.index(here[0]) > order.index(ts)):
                break
            try:
                sess.step_timestep()
            except kc.KernelcoreError:
                pass  # the run failed: the session has ended, its stop_reason says why (below)
            guard -= 1
            if sess.stop_reason.startswith(("breakpoint", "error", "watch")):
                break
        self.refresh_steps()
        if sess.stop_reason.startswith(("breakpoint", "error", "watch")):
            self.status += f" ({sess.stop_reason})"
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

    def __init__(self, session_or_trace, op=None, program=None, **kw):
        super().__init__(**kw)
        self._init_stepper(session_or_trace, op, program)
        if isinstance(session_or_trace, kc.DebugSession):  # follow moves made elsewhere (a cell, the sidebar)
            self.follow_moves(session_or_trace, "refresh_steps")

    goto = goto_timestep
    next = next_timestep
    prev = prev_timestep
    refresh = refresh_steps

    def _messages(self) -> dict:
        return {"goto": self._stepper_goto, "next": self._stepper_next, "prev": self._stepper_prev}
