"""The `kernelcore.debugger` comm: JupyterLab's debugger sidebar talks to the kernel's live debug session.

Registered when kernelcore_widgets is imported in an IPython kernel (`register()`; idempotent), and by
`%load_ext kernelcore_widgets`. Why here and not in `kc.debug`: the engine imports nothing from Jupyter
(DESIGN.md's layering), so the adapter that knows about comms registers the target; the engine only offers
what an adapter needs: `kernelcore.observe.debug.active_session()` (the session started last), `session_hooks`
(called with each new session) and each session's `listeners` (called after every move, whoever moved it:
the sidebar, a Debugger widget, a cell). So the sidebar works with no widget displayed, follows sessions
started after it connected, and follows moves made from Python.

Messages are JSON, described once in `debug_protocol.schema.json` (next to this file; its TypeScript types
are generated into labextension/src/protocol.generated.ts; the commands themselves are the table of
contract/commands.py, which dispatch.py runs):
  browser -> kernel  {"type": "request", "id": int, "command": str, "args": {...}}
  kernel -> browser  {"type": "reply", "id": int, "command": str, "ok": bool, "error": str|null, "result": ...}
                     {"type": "state", "state": State}    (after every reply and every move of the session)
`DebugChannel.handle(msg)` is the whole protocol as a function (tests drive it without a kernel).
"""
from __future__ import annotations

import json
import logging
import weakref
from pathlib import Path
from typing import Callable

from kernelcore.observe.debug import active_session, session_hooks

from .dispatch import command_of, run_command, to_wire
from .kernel_targets import hold_open, pin_to_main_shell, register_target
from .pause_route import is_pause, serve_pause_beside
from .requests import MAX_INT, MAX_STR, NameTaken, RequestError, brief, error_text
from .schema import value_preview

TARGET = "kernelcore.debugger"
_log = logging.getLogger(__name__)
SCHEMA_PATH = Path(__file__).with_name("debug_protocol.schema.json")
PROTOCOL_VERSION = 1
MAX_PREVIEWS = 200  # variables previewed per state message (the rest say so)


def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# -- the state the sidebar shows -------------------------------------------------------------------------
def _callstack(sess) -> list[dict]:
    frames = sess.position.frames
    out = []
    for depth, f in enumerate(reversed(frames)):
        d = f.to_json()
        d["depth"] = len(frames) - 1 - depth
        d["label"] = str(f)
        out.append(d)  # innermost first, as debuggers list a stack
    return out


def _variables(sess) -> list[dict]:
    """The scope forest at the cursor: every scope, innermost chain first; values previewed, up to MAX_PREVIEWS,
    in the scopes the cursor's op sees (its scope and their ancestors) first, then in the others (a past
    timestep's step scope, rebuilt from the trace, shows its values as a live one does)."""
    forest = sess.forest()
    inner = sess.position.innermost
    chain: list[int] = []
    sid = inner.scope if inner is not None else (forest.roots[0] if forest.roots else None)
    while sid is not None and sid in forest:
        chain.append(sid)
        sid = forest[sid].parent
    budget = MAX_PREVIEWS
    out = []
    order = chain + [n.id for n in forest if n.id not in chain]
    for sid in order:
        node = forest[sid]
        seen = sid in chain
        vars_ = []
        for name, info in node.vars.items():
            v = info.to_json()
            v["preview"] = None
            if budget > 0 and info.kind == "tensor":
                v["preview"] = value_preview(node._values[name], info.place)
                budget -= 1
            vars_.append(v)
        out.append({"scope": sid, "parent": node.parent, "label": node.label(), "visible": seen, "vars": vars_})
    return out


def state_json(sess) -> dict:
    """What the sidebar shows of a session (or of none)."""
    if sess is None:
        return {"version": PROTOCOL_VERSION, "session": None}
    pause = sess.pauses[sess.pause_index]
    program = sess.program
    op_types = sorted({op.type for op in program.all_ops()})
    return {"version": PROTOCOL_VERSION, "session": {
        "id": id(sess),
        "position": sess.position.to_json(),
        "position_text": str(sess.position),
        "stop_reason": sess.stop_reason,
        "finished": sess.finished,
        "at_present": sess.at_present,
        "pause": sess.pause_index,
        "pauses": len(sess.pauses),
        "event": pause.index,
        "timestep": sess.timestep,
        "callstack": _callstack(sess),
        "variables": _variables(sess),
        "breakpoints": [b.to_json() for b in sess.breakpoints],
        "watches": [w.to_json() for w in sess.watches],
        "hits": [h.to_json() for h in sess.hits[-100:]],
        "op_types": op_types,
    }}


# -- the protocol --------------------------------------------------------------------------------------------
class ProtocolError(RequestError):
    """A request the debug protocol does not know (the argument checks are requests.py's, shared with the
    widgets)."""


class DebugChannel:
    """One sidebar's connection. `send(msg)` delivers a message to the browser; `session()` finds the
    session to drive (by default the one started last)."""

    def __init__(self, send: Callable[[dict], None], session: Callable | None = None, namespace: dict | None = None):
        self._send = send
        self._namespace = namespace  # where "send to notebook" binds names (None: the IPython user namespace)
        self._session = session or active_session
        self._bound = None  # weakref to the session whose listeners hold our follow()
        self._quiet = False
        ref = weakref.ref(self)

        def follow(_sess, ref=ref):
            ch = ref()
            if ch is not None and not ch._quiet:
                ch.push()
        self._follow = follow

    def _bind(self, sess) -> None:
        old = self._bound() if self._bound is not None else None
        if old is sess:
            return
        if old is not None and self._follow in old.listeners:
            old.listeners.remove(self._follow)
        if sess is not None:
            sess.listeners.append(self._follow)
        self._bound = weakref.ref(sess) if sess is not None else None

    def session(self):
        sess = self._session()
        self._bind(sess)
        return sess

    def push(self) -> None:
        self._send({"type": "state", "state": state_json(self.session())})

    def close(self) -> None:
        self._bind(None)

    def handle(self, msg) -> None:
        """Answer one request from the browser: exactly one reply (an error reply for anything that fails,
        malformed requests included), then the state. A Pause is answered alone: it may come on another
        thread while a move runs here, and that move sends the state once it stops (pause_route.py)."""
        reply = {"type": "reply", "id": _reply_id(msg), "command": _reply_command(msg),
                 "ok": True, "error": None, "result": None}
        if is_pause(msg):
            self._send(self._answer_pause(reply))
            return
        try:
            command = msg.get("command") if isinstance(msg, dict) else None
            if not isinstance(msg, dict) or msg.get("type") != "request" or not isinstance(command, str):
                raise ProtocolError(f"expected {{'type': 'request', 'id': int, 'command': str, 'args': {{}}}}, "
                                    f"got {brief(msg)}")
            args = msg.get("args") or {}
            if not isinstance(args, dict):
                raise ProtocolError(f"'args' must be an object, got {brief(args)}")
            self._quiet = True
            try:
                reply["result"] = self._do(command, args)
            finally:
                self._quiet = False
        except NameTaken as e:  # the sidebar proposes the free name and asks before overwriting
            reply["ok"], reply["error"], reply["result"] = False, error_text(e), e.to_json()
        except Exception as e:  # the browser must get an answer whatever went wrong here
            reply["ok"], reply["error"], reply["result"] = False, error_text(e), None
        self._send(reply)
        try:
            self.push()
        except Exception as e:  # the reply went; a state that cannot be built must not raise into the comm
            self._send({"type": "state", "state": {"version": PROTOCOL_VERSION, "session": None}})
            _log.warning("kernelcore debugger: the state after %s could not be built: %s", reply["command"],
                         error_text(e))

    def _answer_pause(self, reply: dict) -> dict:
        """Pause's reply: ok when a move was running to be asked, else an error saying none was. Reads the
        session without binding to it (the move's thread owns the listeners)."""
        sess = self._session()
        if sess is None:
            return {**reply, "ok": False, "error": "no debug session in this kernel: nothing to pause"}
        if not sess.request_pause():
            return {**reply, "ok": False, "error": "no move is running: nothing to pause"}
        return reply

    def _do(self, command: str, args: dict):
        command_of(command)
        if command == "state":
            return None
        sess = self.session()
        if sess is None:
            raise ProtocolError("no debug session in this kernel: start one with kc.debug(program, feed=...)")
        return to_wire(run_command(sess, command, args, namespace=self._namespace))


def _reply_id(msg) -> int:
    rid = msg.get("id") if isinstance(msg, dict) else None
    return rid if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) <= MAX_INT else -1


def _reply_command(msg) -> str:
    command = msg.get("command") if isinstance(msg, dict) else None
    return command[:MAX_STR] if isinstance(command, str) else ""


# -- the kernel side ---------------------------------------------------------------------------------------------
_channels: "weakref.WeakSet[DebugChannel]" = weakref.WeakSet()
_open_comms: list = []  # (comm, channel): kept alive while open


def _on_new_session(_sess) -> None:
    for ch in list(_channels):
        ch.push()


def _open(comm, open_msg) -> None:
    pin_to_main_shell(comm)
    serve_pause_beside(comm)
    ch = DebugChannel(lambda m: comm.send(m))
    _channels.add(ch)
    hold_open(comm, ch, _open_comms, on_msg=lambda msg: ch.handle(msg["content"]["data"]), on_closed=ch.close)
    ch.push()


def register() -> bool:
    """Register the comm target in the running IPython kernel (no-op elsewhere). True when registered."""
    if not register_target(TARGET, _open):
        return False
    if _on_new_session not in session_hooks:
        session_hooks.append(_on_new_session)
    return True
