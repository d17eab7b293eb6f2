"""The flight recorder's summary thread (`background=True`): a finished iteration's C pass over its arrays runs
here while the executor's thread runs the next iteration.

During a run the executor's thread only appends each op record to the run's list (its values are held by
reference, and a kernel never mutates a value anything else holds). At the run's end it names the iteration's
rows (Python, which needs the GIL wherever it runs: here it would take it in turns with the executor's) and hands
over the one C call over its arrays (kernelcore/observe/iteration_summaries.py), which leaves the GIL for its
whole pass over the elements: on a machine with a core to spare that pass costs the run little time. At the next
run's end the recorder waits for it, adds the rows and judges the watches, so a hit stops the loop at the end of
the iteration after the one it happened in (the paused session replays the hit's iteration to that op exactly)."""
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
