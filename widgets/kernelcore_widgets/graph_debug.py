"""Which session a graph's debug actions may drive, and which messages are those actions.

The actions ("Break here" / "Run to here" on an op, "Break on write" / "Watch..." on a variable) are the
ProgramGraph widget's (program_graph.py): they act on the session it was given (a Debugger's graph: the
Debugger's session), else on the kernel's live session (`kc.active_session()`), run by the debug commands'
dispatcher. The browser sends `{"type": "debug", "action": ...}`; the answer is the `debug` trait
`{"live", "text", "ok"}`. The session tells its listeners (the sidebar's comm, a Debugger widget), so every
breakpoint list bound to it updates.

Which session a graph may drive: one that runs the program the graph shows, or a program with the same ops
(a `clone()`, a copy loaded again from its file): breakpoints are positions (block, op index) and variable
names, so they mean the same thing there. Attributes may differ (a learning rate, `is_test`). A program whose
ops differ anywhere is refused, and the widget says where the two differ.
"""
from __future__ import annotations


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


def is_debug_message(data) -> bool:
    """An ipywidgets custom message carrying {"type": "debug", ...}."""
    content = data.get("content") if isinstance(data, dict) else None
    return isinstance(content, dict) and content.get("type") == "debug"

