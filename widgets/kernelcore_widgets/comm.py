"""The `kernelcore.debugger` comm: JupyterLab's debugger sidebar talks to the kernel's live debug session.

Registered when kernelcore_widgets is imported in an IPython kernel (`register()`; idempotent), and by
`%load_ext kernelcore_widgets`. Why here and not in `kc.debug`: the engine imports nothing from Jupyter
(DESIGN.md's layering), so the adapter that knows about comms registers the target; the engine only offers
what an adapter needs: `kernelcore.debug.active_session()` (the session started last), `session_hooks`
(called with each new session) and each session's `listeners` (called after every move, whoever moved it:
the sidebar, a Debugger widget, a cell). So the sidebar works with no widget displayed, follows sessions
started after it connected, and follows moves made from Python.

Messages are JSON, described once in `debug_protocol.schema.json` (next to this file; the TypeScript twin
is labextension/src/protocol.ts):
  browser -> kernel  {"type": "request", "id": int, "command": str, "args": {...}}
  kernel -> browser  {"type": "reply", "id": int, "command": str, "ok": bool, "error": str|null, "result": ...}
                     {"type": "state", "state": State}    (after every reply and every move of the session)
`DebugChannel.handle(msg)` is the whole protocol as a function (tests drive it without a kernel).
"""
from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Callable

import kernelcore as kc
from kernelcore.debug import active_session, session_hooks

from .schema import value_preview

TARGET = "kernelcore.debugger"
SCHEMA_PATH = Path(__file__).with_name("debug_protocol.schema.json")
PROTOCOL_VERSION = 1
MAX_PREVIEWS = 200  # variables previewed per state message (the rest say so)

MOVES = ("step", "next", "finish", "step_timestep", "cont", "back", "back_timestep", "reverse_cont", "present")


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
    """The scope forest at the cursor: every scope, innermost chain first; values previewed in the scopes the
    cursor's op sees (its scope and their ancestors), up to MAX_PREVIEWS."""
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
            if seen and budget > 0 and info.kind == "tensor":
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
class ProtocolError(ValueError):
    pass


def _int(args, key):
    v = args.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ProtocolError(f"{key!r} must be an integer, got {v!r:.40}")
    return v


def _num(args, key):
    v = args.get(key)
    if v is None:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ProtocolError(f"{key!r} must be a number, got {v!r:.40}")
    return float(v)


class DebugChannel:
    """One sidebar's connection. `send(msg)` delivers a message to the browser; `session()` finds the
    session to drive (by default the one started last)."""

    def __init__(self, send: Callable[[dict], None], session: Callable | None = None):
        self._send = send
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
        """Answer one request from the browser: a reply, then the state."""
        rid = msg.get("id") if isinstance(msg, dict) else None
        command = msg.get("command") if isinstance(msg, dict) else None
        reply = {"type": "reply", "id": rid if isinstance(rid, int) else -1, "command": str(command),
                 "ok": True, "error": None, "result": None}
        try:
            if not isinstance(msg, dict) or msg.get("type") != "request" or not isinstance(command, str):
                raise ProtocolError(f"expected {{'type': 'request', 'id': int, 'command': str, 'args': {{}}}}, "
                                    f"got {str(msg)[:80]}")
            args = msg.get("args") or {}
            if not isinstance(args, dict):
                raise ProtocolError(f"'args' must be an object, got {str(args)[:40]}")
            self._quiet = True
            try:
                reply["result"] = self._do(command, args)
            finally:
                self._quiet = False
        except (ProtocolError, kc.KernelcoreError, ValueError, IndexError) as e:
            reply["ok"], reply["error"] = False, str(e)
        except Exception as e:  # the browser must get an answer whatever went wrong here
            reply["ok"], reply["error"] = False, f"{type(e).__name__}: {e}"
        self._send(reply)
        self.push()

    def _do(self, command: str, args: dict):
        if command == "state":
            return None
        sess = self.session()
        if sess is None:
            raise ProtocolError("no debug session in this kernel: start one with kc.debug(program, feed=...)")
        if command in MOVES:
            try:
                getattr(sess, command)()
            except kc.OpRunError:
                pass  # the run failed: the state's stop_reason says why
            return None
        if command == "run_to":
            t = args.get("timestep")
            sess.run_to(_int(args, "block"), _int(args, "op"), t if isinstance(t, int) else None)
        elif command == "run_n":
            sess.run_n(_int(args, "n"))
        elif command == "goto_pause":
            sess.goto_pause(_int(args, "pause"))
        elif command == "goto_event":
            sess.goto_event(_int(args, "event"))
        elif command == "break_add":
            kind = args.get("kind")
            if kind == "op_type":
                bp = sess.break_on(str(args.get("op_type") or ""))
            elif kind == "op":
                bp = sess.break_on(block=_int(args, "block"), op=_int(args, "op"))
            elif kind == "write":
                bp = sess.break_on(write=str(args.get("var") or ""))
            elif kind == "nan":
                bp = sess.break_on(nan=True)
            else:
                raise ProtocolError(f"break_add kind must be op_type, op, write or nan, got {kind!r:.40}")
            return bp.to_json()
        elif command == "break_enable":
            bid, on = _int(args, "id"), bool(args.get("enabled"))
            for b in [*sess.breakpoints, *sess.watches]:
                if b.id == bid:
                    b.enabled = on
                    return None
            raise ProtocolError(f"no breakpoint or watch #{bid}")
        elif command == "break_remove":
            sess.remove_breakpoint(_int(args, "id"))
        elif command == "watch_add":
            w = sess.watch(args.get("var") or None, str(args.get("cond") or ""), op_type=args.get("op_type") or None,
                           lo=_num(args, "lo"), hi=_num(args, "hi"))
            return w.to_json()
        elif command == "provenance":
            depth = args.get("depth", 4)
            return sess.provenance(str(args.get("name") or ""), depth if isinstance(depth, int) else 4).to_json()
        else:
            raise ProtocolError(f"unknown command {command!r:.40}")
        return None


# -- the kernel side ---------------------------------------------------------------------------------------------
_channels: "weakref.WeakSet[DebugChannel]" = weakref.WeakSet()
_open_comms: list = []  # (comm, channel): kept alive while open


def _on_new_session(_sess) -> None:
    for ch in list(_channels):
        ch.push()


def _open(comm, open_msg) -> None:
    ch = DebugChannel(lambda m: comm.send(m))
    _channels.add(ch)
    pair = (comm, ch)
    _open_comms.append(pair)

    @comm.on_msg
    def _recv(msg):
        ch.handle(msg["content"]["data"])

    @comm.on_close
    def _closed(_msg):
        ch.close()
        if pair in _open_comms:
            _open_comms.remove(pair)
    ch.push()


_registered = False


def register() -> bool:
    """Register the comm target in the running IPython kernel (no-op elsewhere). True when registered."""
    global _registered
    if _registered:
        return True
    try:
        from IPython import get_ipython
        ip = get_ipython()
        if ip is None or not hasattr(ip, "kernel"):
            return False
        from comm import get_comm_manager
        get_comm_manager().register_target(TARGET, _open)
    except Exception:  # not in a kernel, or a kernel without comms: nothing to register
        return False
    if _on_new_session not in session_hooks:
        session_hooks.append(_on_new_session)
    _registered = True
    return True
