"""The `kernelcore.health` comm: JupyterLab's "Training health" panel shows the flight recorders of the active
notebook's kernel (health_recorders.py finds them), live while a recorded loop runs.

Messages (JSON):
  browser -> kernel  {"req": int, "type": "state", "recorder"?: str, "stat"?, "sort"?, "filter"?, "page"?,
                      "points"?: int}  (what to show; remembered for the pushes that follow)
                     {"req": int, "type": "select", "recorder"?: str, "block": int, "op": int, "iteration": int}
                     (a debug session paused right after that op in that iteration: the debugger sidebar,
                     which follows the newest session, moves there)
  kernel -> browser  {"req": int | null, "ok": bool, "error": str | null, "result": HealthPanelState | ...}
                     (req null: a push, as a recorded loop's iterations end and after each cell; the first,
                     when the comm opens, has no result: the panel then asks for the state)
HealthPanelState: {"recorders": [{name, label, iterations, stopped}], "recorder": name | null, "hint": str,
"loss_name": str | null, "view": {stat, sort, filter, page, points}, "payload": health_payload.py's dict | null}.

Every request is answered exactly once (an error reply for anything that fails, malformed requests included).
What is sent is bounded: at most MAX_POINTS_PER_SERIES points a series, a page of ops, every string clipped to
MAX_TEXT characters, and a message past MAX_MESSAGE_BYTES is replaced by an error. The requests run on the
kernel's main shell (kernel_targets.pin_to_main_shell): the recorder's tables are written there, by the loop.
The opening may run on the comm's subshell, beside a running cell (the panel opens it there): it reads no
recorder, and the state comes with the pushes of health_follow.py or the answer to the panel's request.

Live updates: health_follow.py pushes every connected panel's state as a recorded cell's runs end.
"""
from __future__ import annotations

import json
import time
from typing import Callable

from . import health_follow, health_series as hs
from .health_payload import SORTS, View, guess_loss, health_payload
from .health_recorders import MAX_LABEL, RecorderList, describe
from .health_view import session_at
from .kernel_targets import hold_open, message_data, pin_to_main_shell, register_target
from .requests import MAX_INT, RequestError, brief, choice_arg, error_text, int_arg, str_arg

TARGET = "kernelcore.health"
DEFAULT_POINTS = 150         # points a series in the panel (it is a few hundred pixels wide)
MAX_POINTS_PER_SERIES = 500
MAX_TEXT = 200               # characters of any name sent (an op type, a variable, a recorder)
MAX_MESSAGE_BYTES = 1 << 20  # a message's JSON; a larger state is answered with an error instead
HELLO = {"req": None, "ok": True, "error": None, "result": None}  # the comm is open: ask for the state
EMPTY_HINT = ("No flight recorder in this kernel yet. Record a training loop with "
              "`with kc.record(main, scope) as rec:` around it; this panel shows the recorders bound to a name "
              "in the notebook and follows the loop while it runs.")


def _ipython_namespace() -> dict:
    try:
        from IPython import get_ipython
        ip = get_ipython()
    except Exception:  # no IPython: nothing bound in a notebook
        return {}
    return ip.user_ns if ip is not None else {}


class HealthChannel:
    """One panel's connection. `send(msg)` delivers a message to the browser; `namespace()` is where recorders
    are looked for (the IPython user namespace by default)."""

    def __init__(self, send: Callable[[dict], None], namespace: Callable[[], dict] | None = None):
        self._send = send
        self.recorders = RecorderList(namespace or _ipython_namespace)
        self.view = View()
        self.points = DEFAULT_POINTS
        self.wanted: str | None = None  # the recorder the person picked (None: the most recent)
        self.session = None  # the session a select made: kept alive, the sidebar's engine list is weak
        self.build_s = 0.0

    # -- the state ---------------------------------------------------------------------------------------
    def state(self) -> dict:
        t0 = time.monotonic()
        found = self.recorders.found()
        picked = self.recorders.pick(self.wanted, found)
        listed = [describe(name, rec) for name, rec in found]
        view = {"stat": self.view.stat, "sort": self.view.sort, "filter": self.view.filter,
                "page": self.view.page, "points": self.points}
        if picked is None:
            out = {"recorders": listed, "recorder": None, "hint": EMPTY_HINT, "loss_name": None, "view": view,
                   "payload": None}
        else:
            name, rec = picked
            loss = guess_loss(rec.program)
            payload = health_payload(rec, self.view, loss, self.points)
            self.view.page = view["page"] = payload["page"]
            hint = "" if len(rec.summaries) else "recording: no iteration has ended yet"
            out = {"recorders": listed, "recorder": name[:MAX_LABEL], "hint": hint, "loss_name": loss,
                   "view": view, "payload": payload}
        self.build_s = time.monotonic() - t0
        return {**clip_texts(out), "hint": out["hint"]}  # the hint is ours, and longer than a name

    def push(self) -> None:
        self._send(bounded({"req": None, "ok": True, "error": None, "result": self.state()}))

    # -- requests ----------------------------------------------------------------------------------------
    def handle(self, msg) -> None:
        """Answer one request: exactly one reply, an error reply for anything that fails."""
        reply = {"req": request_id(msg), "ok": True, "error": None, "result": None}
        try:
            reply["result"] = self._do(msg)
            reply = bounded(reply)
        except Exception as e:  # the panel waits for this answer: it must come, whatever went wrong
            reply.update(ok=False, error=error_text(e), result=None)
        self._send(reply)

    def _do(self, msg):
        if not isinstance(msg, dict):
            raise RequestError(f"a request is a JSON object, got {brief(msg)}")
        kind = msg.get("type")
        if kind == "state":
            self._choose(msg)
            return self.state()
        if kind == "select":
            return self._select(msg)
        raise RequestError(f"unknown request type {brief(kind)} (state or select)")

    def _choose(self, msg: dict) -> None:
        """Take what the request asks to see; nothing changes unless every field is well formed."""
        wanted = str_arg(msg, "recorder", default=self.wanted or "", max_len=MAX_LABEL, empty_ok=True) or None
        view = View(stat=choice_arg(msg, "stat", hs.STATS, default=self.view.stat),
                    sort=choice_arg(msg, "sort", SORTS, default=self.view.sort),
                    filter=str_arg(msg, "filter", default=self.view.filter, max_len=MAX_TEXT, empty_ok=True),
                    page=int_arg(msg, "page", lo=0, hi=10 ** 6, default=self.view.page))
        points = int_arg(msg, "points", lo=16, hi=MAX_POINTS_PER_SERIES, default=self.points)
        self.wanted, self.view, self.points = wanted, view, points

    def _select(self, msg: dict) -> dict:
        block = int_arg(msg, "block", lo=0, hi=10 ** 6)
        op = int_arg(msg, "op", lo=0, hi=10 ** 9)
        iteration = int_arg(msg, "iteration", lo=0, hi=10 ** 12)
        wanted = str_arg(msg, "recorder", default=self.wanted or "", max_len=MAX_LABEL, empty_ok=True) or None
        picked = self.recorders.pick(wanted)
        if picked is None:
            raise RequestError("no flight recorder in this kernel: " + EMPTY_HINT)
        if wanted is not None and picked[0][:MAX_LABEL] != wanted:
            raise RequestError(f"no recorder named {brief(wanted)} in this kernel any more")
        sess = session_at(picked[1], block, op, iteration)
        self.session = sess
        return clip_texts({"block": block, "op": op, "iteration": iteration, "stop_reason": sess.stop_reason,
                           "position": str(sess.position)})


def request_id(msg):
    req = msg.get("req") if isinstance(msg, dict) else None
    return req if isinstance(req, int) and not isinstance(req, bool) and abs(req) <= MAX_INT else None


def clip_texts(value):
    """`value` with every string longer than MAX_TEXT cut there (an ellipsis last): names come from programs
    and notebooks, and a program may name a variable with a megabyte."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT - 1] + "\u2026"
    if isinstance(value, dict):
        return {k: clip_texts(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clip_texts(v) for v in value]
    return value


def bounded(msg: dict) -> dict:
    """`msg` when its JSON fits MAX_MESSAGE_BYTES, else an error reply saying so (NaN/Inf are not JSON: the
    payload has none, and an error says so if one slipped in)."""
    size = len(json.dumps(msg, allow_nan=False))
    if size > MAX_MESSAGE_BYTES:
        raise RequestError(f"the health state is {size} bytes; at most {MAX_MESSAGE_BYTES} are sent: show fewer "
                           f"points a series")
    return msg


# -- the kernel side ----------------------------------------------------------------------------------------
_open_comms: list = []  # (comm, channel): kept alive while open


def _open(comm, _open_msg) -> None:
    pin_to_main_shell(comm)
    ch = HealthChannel(lambda m: comm.send(m))
    hold_open(comm, ch, _open_comms, on_msg=lambda msg: ch.handle(message_data(msg)),
              on_closed=lambda: health_follow.channels.discard(ch))
    # a greeting without the state: the opening may be handled beside a running cell (on a subshell), where
    # reading a recorder the loop writes is not safe; the panel asks for the state at once, on the main shell,
    # and the loop's pushes (on its thread, once the channel is connected, after the greeting) bring it sooner
    comm.send(HELLO)
    health_follow.channels.add(ch)


def register() -> bool:
    """Register the comm target and the cell hooks in the running IPython kernel (no-op elsewhere)."""
    if not register_target(TARGET, _open):
        return False
    from IPython import get_ipython
    events = get_ipython().events
    health_follow.follower.any_bound = lambda: RecorderList(_ipython_namespace).any_bound()
    for name, hook in (("pre_run_cell", health_follow.follower.cell_starts),
                       ("post_run_cell", health_follow.follower.cell_ended)):
        if hook not in events.callbacks.get(name, []):
            events.register(name, hook)
    return True
