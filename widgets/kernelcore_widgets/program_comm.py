"""The `kernelcore.program` comm: the program renderer (a MIME output, no widget) fetches the parts of a big
program that the cell result left out (kernelcore.view.program_parts): a group's ops when it is opened, and
search hits over every name.

The engine keeps displayed programs weakly by id (`kernelcore.view.program_parts.lookup`) and imports nothing
from Jupyter; this adapter registers the target when kernelcore_widgets is imported (as the debugger's).
Messages (JSON):
  browser -> kernel  comm open {"id": program id}; then {"req": int, "type": "contents", "block": int,
                     "groups": [group id | null], "loaded": [group id]} or {"req": int, "type": "search",
                     "query": str}
  kernel -> browser  {"req": int | null, "ok": bool, "error": str | null, "result": ...}
                     (a program the kernel no longer has answers ok false: "re-run the cell to open it")
Every request is answered exactly once: one of the wrong shape (checked here, before the engine sees it),
or one the engine fails on in any way, answers ok false with the reason.
"""
from __future__ import annotations

from kernelcore.view.program_parts import ProgramGone, lookup

from .kernel_targets import message_data, register_target
from .requests import MAX_INT, MAX_STR, RequestError, brief, error_text

TARGET = "kernelcore.program"
MAX_GROUPS = 10_000  # group ids one request may name (the engine may cap lower)


def request_id(msg):
    """The request's `req` to echo back: an integer a browser holds exactly, else None."""
    req = msg.get("req") if isinstance(msg, dict) else None
    return req if isinstance(req, int) and not isinstance(req, bool) and abs(req) <= MAX_INT else None


def check_request(msg) -> None:
    """RequestError unless `msg` has the shape of a parts request: the engine then sees only plain fields
    (no nested objects as group ids, no numbers past the safe range, no unbounded strings)."""
    if not isinstance(msg, dict):
        raise RequestError(f"a request is a JSON object, got {brief(msg)}")
    kind = msg.get("type")
    if kind == "contents":
        block = msg.get("block")
        if not isinstance(block, int) or isinstance(block, bool) or not 0 <= block <= MAX_INT:
            raise RequestError(f"contents: 'block' must be a block index, got {brief(block)}")
        for field in ("groups", "loaded"):
            ids = msg.get(field, [])
            if not isinstance(ids, list) or len(ids) > MAX_GROUPS or \
                    not all(g is None or isinstance(g, str) and len(g) <= MAX_STR for g in ids):
                raise RequestError(f"contents: {field!r} must be a list of at most {MAX_GROUPS} group ids "
                                   f"(strings, or null for block level), got {brief(ids)}")
    elif kind == "search":
        query = msg.get("query", "")
        if not isinstance(query, str) or len(query) > MAX_STR:
            raise RequestError(f"search: 'query' must be a string of at most {MAX_STR} characters, "
                               f"got {brief(query)}")
    else:
        raise RequestError(f"unknown request type {brief(kind)} (contents or search)")


def parts_answer(parts, msg) -> dict:
    """`parts.handle(msg)` for a request checked here; {"error": str} for anything that fails."""
    try:
        check_request(msg)
        result = parts.handle(msg)
    except Exception as e:  # the renderer waits for this answer: it must come, whatever went wrong
        return {"error": error_text(e)}
    if not isinstance(result, dict):
        return {"error": f"no answer to this request ({brief(result)})"}
    return result


def answer(pid, msg) -> dict:
    """The reply to one request about program `pid` (tests call this as the comm does)."""
    req = request_id(msg)
    try:
        parts = lookup(pid)
    except ProgramGone as e:
        return {"req": req, "ok": False, "error": str(e), "result": None}
    except Exception as e:  # a malformed program id
        return {"req": req, "ok": False, "error": error_text(e), "result": None}
    result = parts_answer(parts, msg)
    if "error" in result:
        return {"req": req, "ok": False, "error": str(result["error"]), "result": None}
    return {"req": req, "ok": True, "error": None, "result": result}


def _open(comm, open_msg) -> None:
    data = message_data(open_msg)
    pid = data.get("id") if isinstance(data, dict) else None

    @comm.on_msg
    def _recv(msg):
        comm.send(answer(pid, message_data(msg)))


def register() -> bool:
    """Register the comm target in the running IPython kernel (no-op elsewhere). True when registered."""
    return register_target(TARGET, _open)
