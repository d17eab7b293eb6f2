"""The `kernelcore.program` comm: the program renderer (a MIME output, no widget) fetches the parts of a big
program that the cell result left out (kernelcore.program_parts): a group's ops when it is opened, and
search hits over every name.

The engine keeps displayed programs weakly by id (`kernelcore.program_parts.lookup`) and imports nothing
from Jupyter; this adapter registers the target when kernelcore_widgets is imported (as the debugger's).
Messages (JSON):
  browser -> kernel  comm open {"id": program id}; then {"req": int, "type": "contents", "block": int,
                     "groups": [group id | null]} or {"req": int, "type": "search", "query": str}
  kernel -> browser  {"req": int, "ok": bool, "error": str | null, "result": ...}
                     (a program the kernel no longer has answers ok false: "re-run the cell to open it")
"""
from __future__ import annotations

from kernelcore.program_parts import ProgramGone, lookup

from .kernel_targets import register_target

TARGET = "kernelcore.program"


def answer(pid, msg) -> dict:
    """The reply to one request about program `pid` (tests call this as the comm does)."""
    req = msg.get("req") if isinstance(msg, dict) else None
    try:
        parts = lookup(pid)
    except ProgramGone as e:
        return {"req": req, "ok": False, "error": str(e), "result": None}
    result = parts.handle(msg)
    if "error" in result:
        return {"req": req, "ok": False, "error": result["error"], "result": None}
    return {"req": req, "ok": True, "error": None, "result": result}


def _open(comm, open_msg) -> None:
    data = (open_msg.get("content") or {}).get("data") or {}
    pid = data.get("id")

    @comm.on_msg
    def _recv(msg):
        comm.send(answer(pid, msg["content"]["data"]))


def register() -> bool:
    """Register the comm target in the running IPython kernel (no-op elsewhere). True when registered."""
    return register_target(TARGET, _open)
