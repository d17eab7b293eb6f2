"""A graph's debug actions: "Break here" / "Run to here" on an op, "Break on write" / "Watch..." on a variable.

The ProgramGraph widget's, acting on the session it was given (a Debugger's graph: the Debugger's session),
else on the kernel's live session (`kc.active_session()`); run by the debug commands' dispatcher. The browser sends `{"type": "debug", "action": ...}`; the answer is the
`debug` trait `{"live", "text", "ok"}`. The session tells its listeners (the sidebar's comm, a Debugger
widget), so every breakpoint list bound to it updates.

Which session a graph may drive: one that runs the program the graph shows, or a program with the same ops
(a `clone()`, a copy loaded again from its file): breakpoints are positions (block, op index) and variable
names, so they mean the same thing there. Attributes may differ (a learning rate, `is_test`). A program whose
ops differ anywhere is refused, and the widget says where the two differ.
"""
from __future__ import annotations

import traitlets as t

import kernelcore as kc

from .dispatch import run_graph_action
from .kernel_targets import pin_to_main_shell
from .requests import RequestError, brief, error_text


def program_mismatch(shown, running) -> str | None:
    """None when `running` has the ops of `shown` (the same program, a clone, an equal copy); else a sentence
    saying where they differ first (for the widget's note)."""
    if running is shown:
        return None
    if running.num_blocks != shown.num_blocks:
        return f"it has {running.num_blocks} block(s), this graph {shown.num_blocks}"
    for b in range(shown.num_blocks):
        here, there = shown.desc.blocks[b].ops, running.desc.blocks[b].ops
        for i in range(max(len(here), len(there))):
            if i >= len(here):
                return f"block {b} has an op #{i} ({there[i].type!r}) there that this graph lacks"
            if i >= len(there):
                return f"block {b} ends before op #{i} ({here[i].type!r}) there"
            a, z = here[i], there[i]
            if a.type != z.type:
                return f"block {b} op #{i} is {z.type!r} there, {a.type!r} here"
            if _slots(a.inputs) != _slots(z.inputs) or _slots(a.outputs) != _slots(z.outputs):
                return f"block {b} op #{i} ({a.type!r}) reads or writes other variables there"
    return None


def _slots(slots) -> list:
    return sorted((s.parameter, tuple(s.arguments)) for s in slots)


class DebugActionsState(t.HasTraits):
    """The `debug` trait and its message. A widget mixes this in, calls `_init_debug_actions(session_fn)` with
    what finds its session (None: none), maps "debug" to `_debug_action` in `_messages()` and has `_program`
    (the program it draws)."""

    # the session as the graph's "Break here" / "Break on write" / "Watch" actions see it:
    # {"live": bool (actions enabled), "text": a sentence for the widget, "ok": whether the last action worked}
    debug = t.Dict().tag(sync=True, ts="{ live: boolean; text: string; ok: boolean } | Record<string, never>")

    _debug_idle_text = ("live debug session (the one the sidebar drives): breakpoints added here show in its "
                        "Breakpoints panel")

    def _init_debug_actions(self, session_fn, drives=None) -> None:
        """`drives(data)`: the widget's other messages that move the session (besides "debug")."""
        self._session_fn = session_fn
        # the debug actions drive the session: on the main shell, in order with the cells and the sidebar
        # (every KCWidget's messages go there already; this keeps them there whatever the base does)
        when = is_debug_message if drives is None else (lambda data: is_debug_message(data) or drives(data))
        pin_to_main_shell(getattr(self, "comm", None), when)
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
        """What the graph's buttons do (a `{"type": "debug", "action": ...}` message): "break_op" (block, op),
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


def is_debug_message(data) -> bool:
    """An ipywidgets custom message carrying {"type": "debug", ...}."""
    content = data.get("content") if isinstance(data, dict) else None
    return isinstance(content, dict) and content.get("type") == "debug"

