"""The "Training health" panels' live updates: each cell that may record (its source names `record`, or a
recorder is bound already) runs with an executor observer, added by IPython's pre_run_cell, that pushes every
connected panel's state (its channel in `channels`) when a run ends, at most every MIN_PUSH_S seconds and so that
building the states takes at most PUSH_SHARE of the loop's time; post_run_cell removes it, and pushes once more
after every cell. The observer runs on the loop's thread, between its runs, where reading the recorder is safe.

It is there whether or not a panel is connected when the cell starts: a panel's comm may open while the cell
runs (JupyterLab opens it on a kernel subshell, beside the cell: after "Run All", the cell that imported
kernelcore_widgets ended while the loop's cell was queued), and that panel follows the loop from its next run's
end. `channels` is therefore added to on the subshell's thread while the loop's thread reads it: a lock guards it.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Callable

from kernelcore.runtime.executor import add_observer, remove_observer

from .health_view import RunEnds
from .requests import error_text

_log = logging.getLogger(__name__)
MIN_PUSH_S = 0.5
PUSH_SHARE = 0.1


class Channels:
    """The connected panels' HealthChannel objects, held weakly (the comm holds its channel while it is open);
    added to and read from more than one thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._set: weakref.WeakSet = weakref.WeakSet()

    def add(self, channel) -> None:
        with self._lock:
            self._set.add(channel)

    def discard(self, channel) -> None:
        with self._lock:
            self._set.discard(channel)

    def snapshot(self) -> list:
        with self._lock:
            return list(self._set)


channels = Channels()


class Follower:
    """Pushes every connected channel's state as a cell's runs end (rate-limited). `any_bound()`: whether a
    recorder is bound to a name in the notebook (health_comm.register sets it)."""

    def __init__(self, any_bound: Callable[[], bool] = lambda: False):
        self.any_bound = any_bound
        self._tokens: dict[int, object] = {}  # thread id -> its cell's observer (a subshell runs cells too)
        self._last = 0.0
        self._build_s = 0.0

    def cell_starts(self, info=None) -> None:
        """Observe the cell's runs when it may record: its source names `record`, or a recorder is bound already
        (`with rec:` again). The observer asks for nothing per op but a call that drops its record, so an
        unrecorded loop in a cell that names `record` pays a few microseconds a run."""
        if self.observing:
            return
        source = getattr(info, "raw_cell", None)
        if not isinstance(source, str) or "record" in source or self.any_bound():
            self._tokens[threading.get_ident()] = add_observer(RunEnds(self.run_ended))

    @property
    def observing(self) -> bool:
        """Whether the cell running on this thread is observed."""
        return threading.get_ident() in self._tokens

    def cell_ended(self, *_args) -> None:
        token = self._tokens.pop(threading.get_ident(), None)
        if token is not None:
            try:
                remove_observer(token)
            except ValueError:  # the cell ran in a context of its own (an async cell): that context is gone
                pass
        self.push_all()

    def run_ended(self) -> None:
        now = time.monotonic()
        if now - self._last < max(MIN_PUSH_S, self._build_s / PUSH_SHARE):
            return
        self.push_all()
        self._last = time.monotonic()

    def push_all(self) -> None:
        t0 = time.monotonic()
        for ch in channels.snapshot():
            try:
                ch.push()
            except Exception as e:  # a state that cannot be built must not raise into the loop or the cell
                _log.warning("kernelcore health panel: the state could not be built: %s", error_text(e))
        self._build_s = time.monotonic() - t0


follower = Follower()
