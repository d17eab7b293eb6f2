"""Summaries made on a thread of their own, beside the run: the flight recorder's `background=True`.

The executor's thread only queues each op record (its values are held by reference, and a kernel never mutates
a value anything else holds); the worker summarises them in order. The C summary (a ctypes call) and NumPy leave
the GIL for their loops over the arrays, so on a machine with a core to spare the summaries cost the run little
time; the rows' bookkeeping still takes the GIL, turn about with the executor's Python. The recorder drains the
queue at the end of each iteration, so a watch hit still stops the loop within the iteration it happened in
(a few ops after the op that tripped it; the paused session replays to that op exactly)."""
from __future__ import annotations

import collections
import threading


class SummaryWorker:
    """The queue is a deque the executor's thread appends to without a lock (a deque's append is atomic); the
    condition is taken only to wake a worker that waits for jobs, or to wait for it. Notifying on every put made
    each op record cost a lock and a wake-up of a thread that was usually still busy."""

    def __init__(self, handle):
        self._handle = handle  # called with each job, in order, on the worker thread
        self._jobs: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._idle = True  # the worker waits for jobs (or there is none): set and read under the condition
        self._thread: threading.Thread | None = None
        self._closing = False
        self.error: BaseException | None = None  # what a job raised; the jobs queued after it are dropped

    def put(self, job) -> None:
        if self._thread is None:
            self._start()
        self._jobs.append(job)
        if self._idle:  # read after the append: a worker that went idle before it is woken here, one that goes
            with self._cv:  # idle after it sees the job before it waits
                self._cv.notify_all()

    def _start(self) -> None:
        with self._cv:
            self._closing = False
            self._thread = threading.Thread(target=self._run, name="kernelcore-recorder", daemon=True)
            self._thread.start()

    def drain(self) -> None:
        """Wait until every queued job is done."""
        with self._cv:
            while self._jobs or not self._idle:
                self._cv.wait()

    def close(self) -> None:
        """Finish the queued jobs and end the thread (a later put starts another)."""
        with self._cv:
            thread, self._closing = self._thread, True
            self._cv.notify_all()
        if thread is not None:
            thread.join()
        self._thread = None
        self._idle = True

    def _run(self) -> None:
        jobs = self._jobs
        while True:
            with self._cv:
                self._idle = True
                self._cv.notify_all()  # a drain waiting for the queue to empty
                while not jobs and not self._closing:
                    self._cv.wait()
                if not jobs:
                    return
                self._idle = False
            while jobs:
                job = jobs.popleft()
                try:
                    if self.error is None:
                        self._handle(job)
                except BaseException as e:  # kept for the executor's thread to raise
                    self.error = e
