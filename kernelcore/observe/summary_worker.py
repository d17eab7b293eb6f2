"""Summaries made on a thread of their own, beside the run: the flight recorder's `background=True`.

The executor's thread only queues each op record (its values are held by reference, and a kernel never mutates
a value anything else holds); the worker summarises them in order. NumPy leaves the GIL for its loops over the
arrays, so on a machine with a core to spare the summaries cost the run little time. The recorder drains the
queue at the end of each iteration, so a watch hit still stops the loop within the iteration it happened in
(a few ops after the op that tripped it; the paused session replays to that op exactly)."""
from __future__ import annotations

import collections
import threading


class SummaryWorker:
    def __init__(self, handle):
        self._handle = handle  # called with each job, in order, on the worker thread
        self._jobs: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._closing = False
        self.error: BaseException | None = None  # what a job raised; the jobs queued after it are dropped

    def put(self, job) -> None:
        with self._cv:
            if self._thread is None:
                self._closing = False
                self._thread = threading.Thread(target=self._run, name="kernelcore-recorder", daemon=True)
                self._thread.start()
            self._jobs.append(job)
            self._cv.notify()

    def drain(self) -> None:
        """Wait until every queued job is done."""
        with self._cv:
            while self._jobs or self._busy:
                self._cv.wait()

    def close(self) -> None:
        """Finish the queued jobs and end the thread (a later put starts another)."""
        with self._cv:
            thread, self._closing = self._thread, True
            self._cv.notify_all()
        if thread is not None:
            thread.join()
        self._thread = None

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._jobs and not self._closing:
                    self._cv.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                self._busy = True
            try:
                if self.error is None:
                    self._handle(job)
            except BaseException as e:  # kept for the executor's thread to raise
                self.error = e
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()
