"""ProgramGraph: a program's blocks as a graph; click a node for its details."""
from __future__ import annotations

import os
import weakref

import traitlets as t

import kernelcore as kc
from kernelcore.observe.debug import active_session, session_hooks
from kernelcore.ir.node_ids import op_id, parse_node_id, var_id
from kernelcore.view.program_parts import program_view_json

from ._base import STATIC, KCWidget
from .dispatch import run_graph_action
from .graph_debug import is_debug_message, program_mismatch
from .kernel_targets import pin_to_main_shell
from .program_comm import parts_answer, request_id
from .requests import RequestError, brief, error_text
from .schema import value_preview


def as_program(program) -> kc.Program:
    if isinstance(program, kc.Program):
        return program
    if isinstance(program, (str, os.PathLike)):
        return kc.load_program(program)
    raise TypeError(f"expected a kc.Program or a program file's path, got {type(program).__name__}")


def _find_scope_with(scope, name: str):
    """The scope that holds `name` as seen from `scope` (it or a parent), else the last scope under it
    that holds it locally (a step scope's variable, seen from the run's scope); None when none does."""
    if scope.find_var(name) is not None:
        return scope.find_scope_of(name)
    found = None
    for s in scope.walk():
        if name in s:
            found = s
    return found


def _add_value(d: dict, scope, name: str) -> None:
    """d["value"] (a ValuePreview) and d["value_scope"] (the scope id it is from) when `scope` holds a value
    for `name`; nothing otherwise."""
    s = _find_scope_with(scope, name) if scope is not None else None
    v = s.find_var(name) if s is not None else None
    preview = value_preview(v.value) if v is not None else None
    if preview is not None:
        d["value"], d["value_scope"] = preview, s.id


class ProgramGraph(KCWidget):
    """`ProgramGraph(program, pruned=None, scope=None, side_by_side=False, session=None)`.

    `program` is a kc.Program (or a program file's path); `pruned` the PruneResult of `kc.prune(program, ...)`:
    the removed ops and variables are greyed, or with side_by_side=True the pruned program is drawn beside.
    With a `scope`, the details of a node carry previews of the values it holds. The browser's
    `{"type": "select", "id": ...}` (or a change of `selected`) sets `details`. The details' debug actions
    (graph_debug.py) act on `session`, else on the kernel's live session (`kc.active_session()`)."""

    _esm = STATIC / "ProgramGraph.js"
    _css = STATIC / "ProgramGraph.css"

    # the session as the details' "Break here" / "Break on write" / "Watch" actions see it:
    # {"live": bool (actions enabled), "text": a sentence for the widget, "ok": whether the last action worked}
    debug = t.Dict().tag(sync=True, ts="{ live: boolean; text: string; ok: boolean } | Record<string, never>")
    program = t.Dict().tag(sync=True, ts="ProgramJSON")
    pruned_program = t.Dict(allow_none=True, default_value=None).tag(sync=True, ts="ProgramJSON | null")
    selected = t.Unicode("").tag(sync=True)
    details = t.Dict().tag(sync=True)
    search = t.Unicode("").tag(sync=True)
    collapsed = t.List(t.Unicode()).tag(sync=True)
    ran = t.Dict().tag(sync=True)       # op id -> {"runs", "ns", "timesteps"} of the last run shown; {}: none
    run_diff = t.Dict().tag(sync=True)  # op id -> {"var", "max_abs", "max_rel"} where two runs' outputs differ
    overlay_spec = t.Dict().tag(sync=True)  # per-node numbers the nodes are coloured by (overlay.py); {}: none

    # what the debug note says while the actions are live (a Debugger's graph says its own)
    _debug_idle_text = ("live debug session (the one the sidebar drives): breakpoints added here show in its "
                        "Breakpoints panel")

    def overlay(self, values, *, on: str = "ops", scale="gradient", colors=None, label: str = "value",
                aggregate: str = "max") -> "ProgramGraph":
        """Colour nodes by a number each: `values` is {op id ("o<block>:<index>") or op index of block 0:
        number} with on="ops", {variable name or var id ("v<block>:<name>"): number} with on="vars".

        scale: "gradient" (linear from the smallest to the largest finite value), "log" (the same over
        log10; values <= 0 take the lowest colour) or a list of increasing thresholds (n thresholds: n+1
        bands). colors: '#rrggbb' colours (a gradient's stops, or one per band); None: the view's palette.
        label: what the numbers are (the legend and tooltips say it). aggregate: what a folded group shows
        of its members ("max", "min" or "mean"; a NaN member makes it NaN). NaN and +-Infinity get colours
        of their own; nodes without a value keep theirs. A key the program lacks raises a KernelcoreError
        naming the nearest ones. Returns the graph, so `display(graph.overlay(...))` works."""
        from .overlay import group_values, overlay_state
        spec = overlay_state(self._program, values, on=on, scale=scale, colors=colors, label=label,
                             aggregate=aggregate)
        spec["groups"] = group_values(spec, self.program, getattr(self, "_parts", None))
        self.overlay_spec = spec
        return self

    def clear_overlay(self) -> None:
        """Take the overlay off: nodes get their usual colours back."""
        self.overlay_spec = {}

    def show_run(self, trace, compare=None) -> None:
        """Overlay what `trace`'s run did: ops executed (counts, time), ops that never ran (left out of `ran`);
        with `compare` (another trace of the same program, both keeping values), the ops whose outputs differ."""
        from kernelcore.observe.runs import diff_runs, what_ran
        trace = getattr(trace, "trace", trace)  # a DebugSession gives its trace
        self.ran = {op_id(b, i): r.to_json() for (b, i), r in sorted(what_ran(trace).items())}
        diff = {}
        if compare is not None:
            for d in diff_runs(getattr(compare, "trace", compare), trace):
                key = op_id(d.block, d.op)
                if key not in diff or d.max_abs > diff[key]["max_abs"]:
                    diff[key] = {"var": d.var, "max_abs": _finite(d.max_abs), "max_rel": _finite(d.max_rel),
                                 "timestep": d.timestep}
        self.run_diff = diff

    def _init_graph(self, program, pruned=None, scope=None, side_by_side: bool = False) -> None:
        if side_by_side and pruned is None:
            raise ValueError("side_by_side=True needs pruned= (the PruneResult of kc.prune)")
        self._program = as_program(program)
        self._pruned = pruned
        self._scope = scope
        # a big program: its skeleton; the view asks for a group's ops when it opens it (`contents`)
        self.program, self._parts, self._pruned_marks = program_view_json(self._program, pruned)
        # the pruned program beside: sent in parts too when it is big (its pane asks with "pane": "pruned")
        self._pruned_parts = None
        self.pruned_program = None
        if side_by_side:
            self.pruned_program, self._pruned_parts, _ = program_view_json(pruned.program)

    # -- Python API -------------------------------------------------------------------------------------
    @property
    def scope(self):
        return self._scope

    @scope.setter
    def scope(self, scope) -> None:
        """Where the details' value previews come from (the Debugger points it at the paused op's scope)."""
        self._scope = scope
        self._refresh_details()

    def point_at(self, scope, node_id: str | None = None) -> None:
        """Take values from `scope` and (optionally) select `node_id`: the details are computed once."""
        self._scope = scope
        if node_id is not None and node_id != self.selected:
            self.selected = node_id  # the observer refreshes the details
        else:
            self._refresh_details()

    def select(self, node_id: str) -> dict:
        """Select node `node_id` (an id of `program`) as a click does; return its details."""
        if node_id == self.selected:
            self._refresh_details()
        else:
            self.selected = node_id
        return self.details

    # -- messages ---------------------------------------------------------------------------------------
    def _graph_parts(self, content) -> None:
        """`{"type": "contents"|"search", "req": n, ...}` -> `{"type": "parts", "req": n, "ok", "error",
        "result"}` (a custom message; the parts of a big program, kernelcore.view.program_parts)."""
        req = request_id(content)
        beside = content.get("pane") == "pruned"
        parts = self._pruned_parts if beside else self._parts
        if parts is None:
            self.send({"type": "parts", "req": req, "ok": False, "error": "this program was sent whole",
                       "result": None})
            return
        result = parts_answer(parts, content)
        err = result.get("error")
        if err is None and not beside and content.get("type") == "contents" and self._pruned_marks is not None:
            try:
                result["pruned"] = self._pruned_marks.for_contents(result)
            except Exception as e:  # the view waits for this reply: it says what failed instead
                err = error_text(e)
        self.send({"type": "parts", "req": req, "ok": err is None, "error": None if err is None else str(err),
                   "result": None if err else result})

    def _op_entry(self, b: int, i: int) -> dict:
        if getattr(self, "_parts", None) is not None:
            return self._parts.op_json(b, i)
        return next(o for o in self.program["blocks"][b]["ops"] if o["idx"] == i)

    def _var_entry(self, b: int, name: str) -> dict:
        if getattr(self, "_parts", None) is not None:
            return self._parts.var_json(b, name)
        return next(v for v in self.program["blocks"][b]["vars"] if v["name"] == name)

    def _graph_select(self, content) -> None:
        node_id = content.get("id")
        self.select(node_id if isinstance(node_id, str) else "")

    @t.observe("selected")
    def _on_selected(self, _change) -> None:
        self._refresh_details()

    # node id -> the scope its details take values from (a Debugger's graph: the cursor's); None: `scope`
    details_scope = None

    def _refresh_details(self) -> None:
        if getattr(self, "_program", None) is None:
            return
        if self.details_scope is not None and self.selected:
            self._scope = self.details_scope(self.selected)
        self.details = self.describe(self.selected) if self.selected else {}

    # -- details ----------------------------------------------------------------------------------------
    def describe(self, node_id: str) -> dict:
        """What Python says about node `node_id` (an op or var id of the contract)."""
        parsed = parse_node_id(node_id)
        if parsed is not None and parsed[0] == "op":
            return self._describe_op(parsed[1], parsed[2], node_id)
        if parsed is not None:
            return self._describe_var(parsed[1], parsed[2], node_id)
        return {"id": node_id, "error": f"{node_id!r} is not an op id (o<block>:<index>) or a var id (v<block>:<name>)"}

    def _io(self, block, slots: dict, opdef) -> tuple[dict, dict]:
        out, comments = {}, {}
        specs = {}
        if opdef is not None:
            specs = {s.name: s.comment for s in (*opdef.inputs, *opdef.outputs)}
        for slot, names in slots.items():
            entries = []
            for n in names:
                v = block.find_var_recursive(n)
                e = {"name": n, "id": var_id(v.block.idx, n) if v is not None else None,
                     "dtype": v.dtype_name if v is not None else None,
                     "shape": list(v.shape) if v is not None and v.shape is not None else None}
                _add_value(e, self._scope, n)
                entries.append(e)
            out[slot] = entries
            if specs.get(slot):
                comments[slot] = specs[slot]
        return out, comments

    def _describe_op(self, b: int, i: int, node_id: str) -> dict:
        prog = self._program
        if not 0 <= b < prog.num_blocks or not 0 <= i < len(prog.desc.blocks[b].ops):
            return {"id": node_id, "error": f"the program has no op {node_id} (block {b}, op #{i})"}
        block = prog.block(b)
        op = block.op(i)
        try:
            opdef = op.opdef
        except kc.KernelcoreError:
            opdef = None
        ins, in_comments = self._io(block, op.inputs, opdef)
        outs, out_comments = self._io(block, op.outputs, opdef)
        op_json = self._op_entry(b, i)
        attr_comments = {}
        if opdef is not None:
            for name in op_json["attrs"]:
                spec = opdef.attr_spec(name)
                if spec is not None and spec.comment:
                    attr_comments[name] = spec.comment
        d = {"id": node_id, "kind": "op", "type": op.type, "block": b, "idx": i, "role": op_json["role"],
             "comment": op_json["comment"], "attrs": op_json["attrs"], "attr_comments": attr_comments,
             "inputs": ins, "outputs": outs, "slot_comments": {**in_comments, **out_comments},
             "sub_blocks": op_json["sub_blocks"], "known": opdef is not None}
        for key in ("callsite", "forward"):
            if key in op_json:
                d[key] = op_json[key]
        d["layer"] = self._group_path(b, op_json.get("group"))
        if self._pruned is not None:
            d["removed"] = node_id in self.program["pruned"]["removed_ops"]
        return d

    def _group_path(self, b: int, gid) -> list:
        """The labels of group `gid` and the groups around it, outermost first."""
        if getattr(self, "_parts", None) is not None:  # the skeleton holds only the groups shown so far
            groups = self._parts.blocks[b].by_id
        else:
            groups = {g["id"]: g for g in self.program["blocks"][b].get("groups", ())}
        out = []
        while gid is not None and gid in groups and len(out) < 1000:
            out.append(groups[gid]["label"])
            gid = groups[gid]["parent"]
        return out[::-1]

    def _describe_var(self, b: int, name: str, node_id: str) -> dict:
        prog = self._program
        if not 0 <= b < prog.num_blocks or not prog.block(b).has_var(name):
            return {"id": node_id, "error": f"block {b} declares no variable {name!r}"}
        vj = self._var_entry(b, name)
        writers, readers = [], []
        for blk in prog.blocks:
            here = blk.find_var_recursive(name)
            if here is None or here.block.idx != b:
                continue  # `name` in this block is another variable (or none)
            for k, op in enumerate(blk.ops):
                if name in op.output_arg_names:
                    writers.append(op_id(blk.idx, k))
                if name in op.input_arg_names:
                    readers.append(op_id(blk.idx, k))
        d = {"id": node_id, "kind": "var", "name": name, "block": b, "type": vj["type"], "dtype": vj["dtype"],
             "shape": vj["shape"], "persistable": vj["persistable"], "parameter": vj["parameter"],
             "var_kind": vj["kind"], "written_by": writers, "read_by": readers}
        _add_value(d, self._scope, name)
        if self._pruned is not None:
            d["removed"] = node_id in self.program["pruned"]["removed_vars"]
        return d

    def __init__(self, program, pruned=None, scope=None, side_by_side: bool = False, session=None, **kw):
        super().__init__(**kw)
        self._init_graph(program, pruned, scope, side_by_side)
        self._hook = _weak_hook(self)
        session_hooks.append(self._hook)  # a session started later makes the actions live
        self._init_debug_actions((lambda: session) if session is not None else active_session)

    # -- debug actions (which session a graph may drive: graph_debug.py) ---------------------------------
    def _init_debug_actions(self, session_fn) -> None:
        self._session_fn = session_fn
        # the debug actions drive the session: on the main shell, in order with the cells and the sidebar
        # (every KCWidget's messages go there already; this keeps them there whatever the base does)
        pin_to_main_shell(getattr(self, "comm", None), is_debug_message)
        self._say_debug()

    def _live(self):
        """(session, None) or (None, why the actions cannot work now)."""
        sess = self._session_fn()
        if sess is None:
            return None, "no live debug session in this kernel: start one with kc.debug(program, feed=...)"
        why = program_mismatch(self._program, sess.program)
        if why is not None:
            return None, (f"the live debug session runs another program than this graph shows ({why}): show "
                          f"ProgramGraph(sess.program), or debug this program")
        return sess, None

    def _say_debug(self, text: str | None = None, ok: bool = True) -> None:
        sess, why = self._live()
        if why is not None:
            self.debug = {"live": False, "text": why, "ok": ok if text is not None else True}
            return
        idle = self._debug_idle_text
        if sess.program is not self._program:
            idle += " (it runs a copy of this program with the same ops)"
        self.debug = {"live": True, "ok": ok, "text": text or idle}

    def debug_action(self, action: str, **args) -> str:
        """What the details' buttons do (a `{"type": "debug", "action": ...}` message): "break_op" (block, op),
        "run_to" (block, op), "break_write" (var), "watch" (var, cond, lo?, hi?), on the widget's session, run
        by the debug commands' one dispatcher. The session tells its listeners (the sidebar updates). Returns
        the sentence the widget shows."""
        sess, why = self._live()
        if why is not None:
            raise kc.KernelcoreError(why)
        command, result = run_graph_action(sess, action, args)
        if command == "run_to":
            return f"ran to {sess.position} ({sess.stop_reason})"
        return f"added {'watch' if command == 'watch_add' else 'breakpoint'} {result}"

    def _debug_action(self, content) -> None:
        args = {k: v for k, v in content.items() if k not in ("type", "action")}
        try:
            action = content.get("action")
            if not isinstance(action, str):
                raise RequestError(f"'action' must be a string, got {brief(action)}")
            text = self.debug_action(action, **args)
        except Exception as e:  # every action is answered: the note says why it was not done
            self._say_debug(f"not done: {error_text(e)}", ok=False)
            if not self.debug["live"]:
                self.debug = {**self.debug, "text": f"not done: {self.debug['text']}"}
            return
        self._say_debug(text)

    def close(self) -> None:
        if getattr(self, "_hook", None) in session_hooks:
            session_hooks.remove(self._hook)
        super().close()

    def _messages(self) -> dict:
        return {"select": self._graph_select, "debug": self._debug_action, "contents": self._graph_parts,
                "search": self._graph_parts}


def _weak_hook(widget):
    """A session hook that holds the widget weakly (a closed or dropped widget costs nothing)."""
    ref = weakref.ref(widget)

    def hook(_sess):
        w = ref()
        if w is not None:
            w._say_debug()
    return hook


def _finite(x: float):
    """JSON has no Infinity: an output only one run wrote (or of another shape) differs by "Infinity"."""
    return x if x != float("inf") else "Infinity"
