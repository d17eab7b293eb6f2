"""The `kernelcore.debugger` comm: JupyterLab's debugger sidebar talks to the kernel's live debug session.

Registered when kernelcore_widgets is imported in an IPython kernel (`register()`; idempotent), and by
`%load_ext kernelcore_widgets`. Why here and not in `kc.debug`: the engine imports nothing from Jupyter
(DESIGN.md's layering), so the adapter that knows about comms registers the target; the engine only offers
what an adapter needs: `kernelcore.observe.debug.active_session()` (the session started last), `session_hooks`
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
import logging
import weakref
from pathlib import Path
from typing import Callable

import kernelcore as kc
from kernelcore.observe.debug import active_session, session_hooks

from kernelcore.runtime.place import place_of

from .kernel_targets import pin_to_main_shell, register_target
from .requests import (MAX_INT, MAX_NAME, MAX_STR, NameTaken, RequestError, bool_arg, brief, choice_arg, error_text,
                       int_arg, int_list_arg, num_arg, opt_int_arg, opt_str_arg, str_arg)
from .schema import value_preview
from .tensor_viewer import check_view, diff_base, draw, send_value

TARGET = "kernelcore.debugger"
_log = logging.getLogger(__name__)
SCHEMA_PATH = Path(__file__).with_name("debug_protocol.schema.json")
PROTOCOL_VERSION = 1
MAX_PREVIEWS = 200  # variables previewed per state message (the rest say so)
MAX_PROVENANCE_DEPTH = 64  # levels of a provenance tree one request may ask for

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
        malformed requests included), then the state."""
        reply = {"type": "reply", "id": _reply_id(msg), "command": _reply_command(msg),
                 "ok": True, "error": None, "result": None}
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
            sess.run_to(int_arg(args, "block"), int_arg(args, "op"), opt_int_arg(args, "timestep"))
        elif command == "run_n":
            sess.run_n(int_arg(args, "n"))
        elif command == "goto_pause":
            sess.goto_pause(int_arg(args, "pause"))
        elif command == "goto_event":
            sess.goto_event(int_arg(args, "event"))
        elif command == "break_add":
            kind = choice_arg(args, "kind", ("op_type", "op", "write", "nan"))
            if kind == "op_type":
                bp = sess.break_on(str_arg(args, "op_type"))
            elif kind == "op":
                bp = sess.break_on(block=int_arg(args, "block"), op=int_arg(args, "op"))
            elif kind == "write":
                bp = sess.break_on(write=str_arg(args, "var"))
            else:
                bp = sess.break_on(nan=True)
            return bp.to_json()
        elif command == "break_enable":
            bid, on = int_arg(args, "id"), bool_arg(args, "enabled")
            for b in [*sess.breakpoints, *sess.watches]:
                if b.id == bid:
                    b.enabled = on
                    return None
            raise ProtocolError(f"no breakpoint or watch #{bid}")
        elif command == "break_remove":
            sess.remove_breakpoint(int_arg(args, "id"))
        elif command == "watch_add":
            w = sess.watch(opt_str_arg(args, "var"), str_arg(args, "cond"), op_type=opt_str_arg(args, "op_type"),
                           lo=num_arg(args, "lo"), hi=num_arg(args, "hi"))
            return w.to_json()
        elif command == "tensor":
            return tensor_json(sess, *_tensor_args(args))
        elif command == "tensor_send":
            return self._tensor_send(sess, args)
        elif command == "provenance":
            return sess.provenance(str_arg(args, "name"), int_arg(args, "depth", 0, MAX_PROVENANCE_DEPTH,
                                                                  default=4)).to_json()
        else:
            raise ProtocolError(f"unknown command {brief(command)}")
        return None


    def _tensor_send(self, sess, args) -> dict:
        """Bind the value (or the shown slice) of a variable to `target` in the notebook. A target that is
        taken is replaced only when the request says the person confirmed (`overwrite`); else NameTaken."""
        target = str_arg(args, "target", max_len=MAX_NAME)
        what = choice_arg(args, "what", ("value", "slice"), default="value")
        overwrite = bool_arg(args, "overwrite")
        name, scope, axes, index, diff = _tensor_args(args)
        value, _sid = _find_value(sess, name, scope)
        if value is None:
            raise ProtocolError(f"no tensor {name!r} at {sess.position}: nothing to send")
        if what == "slice":
            axes, index = check_view([int(d) for d in value.shape], axes, index)
            prev = diff_base(sess, name, value) if diff else None
            shown = _diff(value, prev) if prev is not None else value
            _, replaced = send_value(shown, target, self._namespace, (axes, index), overwrite=overwrite)
        else:
            _, replaced = send_value(value, target, self._namespace, overwrite=overwrite)
        return {"sent": target, "what": what, "name": name, "overwritten": replaced}


def _reply_id(msg) -> int:
    rid = msg.get("id") if isinstance(msg, dict) else None
    return rid if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) <= MAX_INT else -1


def _reply_command(msg) -> str:
    command = msg.get("command") if isinstance(msg, dict) else None
    return command[:MAX_STR] if isinstance(command, str) else ""


# -- the tensor panel: one variable's value at the cursor ------------------------------------------------------
def _tensor_args(args) -> tuple:
    name = args.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_STR:
        raise ProtocolError(f"'name' must be a variable name, got {brief(name)}")
    return (name, opt_int_arg(args, "scope"), int_list_arg(args, "axes"), int_list_arg(args, "index"),
            bool_arg(args, "diff"))


def _find_value(sess, name: str, scope: int | None):
    """`name`'s tensor at the cursor and the id of the scope holding it: as the cursor's op sees it, else in
    scope `scope` (where the panel was opened from), else in the last scope of the forest holding it.
    (None, None) when no scope holds a tensor of that name."""
    forest = sess.forest()
    inner = sess.position.innermost
    sid = inner.scope if inner is not None else (forest.roots[0] if forest.roots else None)
    chain = []
    while sid is not None and sid in forest:
        chain.append(sid)
        sid = forest[sid].parent
    order = chain + ([scope] if scope is not None and scope in forest else [])
    order += [n.id for n in reversed(list(forest)) if n.id not in order]
    for sid in order:
        node = forest[sid]
        info = node.vars.get(name)
        if info is not None and info.kind == "tensor":
            v = node._values.get(name)
            if hasattr(v, "shape") and hasattr(v, "dtype"):
                return v, sid
    return None, None


def _diff(value, prev):
    xp = place_of(value).xp
    return xp.subtract(value.astype(xp.float64) if value.dtype.kind in "biu" else value, prev)


def tensor_json(sess, name: str, scope: int | None = None, axes=None, index=None, diff: bool = False) -> dict:
    """What the sidebar's tensor panel shows of `name` at the session's cursor (a TensorView of the schema):
    the TensorViewer's traits, the scope the value is from, and `exists` false (with a status saying so) when
    no scope holds it at this position."""
    where = str(sess.position)
    value, sid = _find_value(sess, name, scope)
    out = {"name": name, "exists": value is not None, "scope": sid, "position_text": where, "pause": sess.pause_index,
           "shape": [], "dtype": "", "place": "", "axes": [0, 1], "index": [], "diff": False,
           "has_previous": False, "slice": None, "health": None}
    if value is None:
        out["status"] = f"{name!r} does not exist at {where}"
        return out
    if value.dtype.kind not in "biufc":
        out["status"] = f"{name!r} is {value.dtype}: the tensor viewer shows numeric tensors"
        return out
    shape = [int(d) for d in value.shape]
    try:
        axes, index = check_view(shape, axes, index)
    except ValueError:  # the variable changed shape since the panel asked (another timestep): start over
        axes, index = check_view(shape)
    prev = diff_base(sess, name, value)
    if prev is not None and getattr(prev, "shape", None) != value.shape:
        prev = None
    diff = diff and prev is not None
    d = draw(_diff(value, prev) if diff else value, axes, index, diff)
    out.update(shape=shape, dtype=str(value.dtype), place=str(place_of(value)), axes=axes, index=index, diff=diff,
               has_previous=prev is not None, slice=d["slice"], health=d["health"],
               status=d["status"] + f" (scope {sid}, at {where})")
    return out


# -- the kernel side ---------------------------------------------------------------------------------------------
_channels: "weakref.WeakSet[DebugChannel]" = weakref.WeakSet()
_open_comms: list = []  # (comm, channel): kept alive while open


def _on_new_session(_sess) -> None:
    for ch in list(_channels):
        ch.push()


def _open(comm, open_msg) -> None:
    pin_to_main_shell(comm)
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


def register() -> bool:
    """Register the comm target in the running IPython kernel (no-op elsewhere). True when registered."""
    if not register_target(TARGET, _open):
        return False
    if _on_new_session not in session_hooks:
        session_hooks.append(_on_new_session)
    return True
