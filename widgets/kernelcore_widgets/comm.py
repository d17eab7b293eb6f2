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

from kernelcore.place import place_of

from .kernel_targets import register_target
from .schema import value_preview
from .tensor_viewer import check_view, diff_base, draw, send_value

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
        elif command == "tensor":
            return tensor_json(sess, *_tensor_args(args))
        elif command == "tensor_send":
            return self._tensor_send(sess, args)
        elif command == "provenance":
            depth = args.get("depth", 4)
            return sess.provenance(str(args.get("name") or ""), depth if isinstance(depth, int) else 4).to_json()
        else:
            raise ProtocolError(f"unknown command {command!r:.40}")
        return None


    def _tensor_send(self, sess, args) -> dict:
        target, what = args.get("target"), args.get("what", "value")
        if what not in ("value", "slice"):
            raise ProtocolError(f"'what' must be 'value' or 'slice', got {what!r:.40}")
        name, scope, axes, index, diff = _tensor_args(args)
        value, _sid = _find_value(sess, name, scope)
        if value is None:
            raise ProtocolError(f"no tensor {name!r} at {sess.position}: nothing to send")
        if what == "slice":
            axes, index = check_view([int(d) for d in value.shape], axes, index)
            prev = diff_base(sess, name, value) if diff else None
            shown = _diff(value, prev) if prev is not None else value
            send_value(shown, str(target), self._namespace, (axes, index))
        else:
            send_value(value, str(target), self._namespace)
        return {"sent": str(target), "what": what, "name": name}


# -- the tensor panel: one variable's value at the cursor ------------------------------------------------------
def _tensor_args(args) -> tuple:
    name = args.get("name")
    if not isinstance(name, str) or not name:
        raise ProtocolError(f"'name' must be a variable name, got {name!r:.40}")
    scope = args.get("scope")
    scope = scope if isinstance(scope, int) and not isinstance(scope, bool) else None
    axes, index = args.get("axes"), args.get("index")
    for key, v in (("axes", axes), ("index", index)):
        if v is not None and (not isinstance(v, list) or not all(isinstance(i, int) for i in v)):
            raise ProtocolError(f"{key!r} must be a list of integers, got {v!r:.40}")
    return name, scope, axes, index, bool(args.get("diff"))


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


def pin_to_main_shell(comm, when: Callable[[dict], bool] | None = None) -> None:
    """Have the kernel run `comm`'s messages from the browser (those `when(data)` accepts; all by default) on
    its main shell, in order with the cells.

    JupyterLab 4.6 sends comm messages over kernel subshells (one per comm target), and ipykernel 7 routes a
    comm's messages to the subshell that last sent on that comm (`_reply_subshell_for`): a breakpoint added
    from a ProgramGraph widget's handler, or a subshell JupyterLab deleted when the comm reconnected, left the
    sidebar's next request waiting forever. And a debug session is a generator that cells drive too: one
    thread must drive it. A no-op with kernels that have no such routing."""
    route = getattr(comm, "_reply_subshell_for", None)
    if route is None:
        return

    def main_shell(data, default, route=route):
        if when is None or when(data):
            return None  # the main shell
        return route(data, default)
    comm._reply_subshell_for = main_shell


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
