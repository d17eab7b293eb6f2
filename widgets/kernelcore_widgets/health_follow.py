"""The "Training health" panels' live updates: while a panel is connected (its channel in `channels`), each cell
that may record (its source names `record`, or a recorder is bound already) runs with an executor observer,
added by IPython's pre_run_cell, that pushes every panel's state when a run ends, at most every MIN_PUSH_S
seconds and so that building the states takes at most PUSH_SHARE of the loop's time; post_run_cell removes it,
and pushes once more after every cell. The observer runs on the loop's thread, between its runs, where reading
the recorder is safe.
"""
from __future__ import annotations

import logging
import time
import weakref

from kernelcore.runtime.executor import add_observer, remove_observer

from .health_view import RunEnds
from .requests import error_text

_log = logging.getLogger(__name__)
MIN_PUSH_S = 0.5
PUSH_SHARE = 0.1
channels: weakref.WeakSet = weakref.WeakSet()  # the connected panels' HealthChannel objects


class Follower:
    """Pushes every channel's state as a cell's runs end (rate-limited), while a panel is connected."""

    def __init__(self):
        self._token = None
        self._last = 0.0
        self._build_s = 0.0

    def cell_starts(self, info=None) -> None:
        """Observe the cell's runs when it may record: its source names `record`, or a recorder is bound already
        (`with rec:` again). Any observer costs the executor a record per op, which an unrecorded loop would pay
        for nothing."""
        if not channels or self._token is not None:
            return
        source = getattr(info, "raw_cell", None)
        if not isinstance(source, str) or "record" in source or any(ch.recorders.any_bound() for ch in channels):
            self._token = add_observer(RunEnds(self.run_ended))

    def cell_ended(self, *_args) -> None:
        token, self._token = self._token, None
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
        for ch in list(channels):
            try:
                ch.push()
            except Exception as e:  # a state that cannot be built must not raise into the loop or the cell
                _log.warning("kernelcore health panel: the state could not be built: %s", error_text(e))
        self._build_s = time.monotonic() - t0


follower = Follower()
