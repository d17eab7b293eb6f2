"""Pause is served beside the move it stops.

A move (Continue, Run to here, ...) runs on the kernel's main shell, where every debug request is pinned
(kernel_targets.pin_to_main_shell): while it runs, the main shell reads nothing else. JupyterLab sends a
comm's messages over a kernel subshell of its own, so a Pause request routed to that subshell (the one it
came from) is read at once, on that subshell's thread, while the move goes on. Its handler only sets the
session's flag (DebugSession.request_pause) and answers; the move, on the main shell, stops before its next
op and sends its own reply and state. A kernel without subshells reads the Pause after the move: it is still
answered once (no move was running), and nothing else changes.
"""
from __future__ import annotations


def is_pause(data) -> bool:
    """A Pause from the sidebar's comm (`{"type": "request", "command": "pause"}`) or from a Debugger
    widget (an anywidget custom message `{"type": "pause"}`)."""
    if not isinstance(data, dict):
        return False
    if data.get("type") == "request":
        return data.get("command") == "pause"
    content = data.get("content")
    return data.get("method") == "custom" and isinstance(content, dict) and content.get("type") == "pause"


def serve_pause_beside(comm) -> None:
    """Route `comm`'s Pause requests to the subshell they came from; every other message as before (to the
    main shell, once pinned). A no-op for comms with no such routing."""
    route = getattr(comm, "_reply_subshell_for", None)
    if route is None:
        return

    def pause_beside(data, default, route=route):
        return default if is_pause(data) else route(data, default)
    comm._reply_subshell_for = pause_beside
