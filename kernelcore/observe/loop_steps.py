"""The timesteps of every loop op in a recorded run, indexed once from the trace and extended as it grows."""
from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class StepRecord:
    """One timestep of a loop op as recorded: its step scope and the events that open and close it."""
    t: int
    scope: int
    begin: int          # index of its step_begin event
    end: int | None     # index of its step_end event (None: not finished at the index asked about)
    order: int          # position in execution order (0 = the first that ran)



class StepIndex:
    """The timesteps of every loop op, read from the trace once and extended as it grows.

    A run of a loop op is a list of steps [t, scope, begin, end]; a new run starts when a step_begin repeats a
    timestep of a run whose last step has ended (the op runs again, inside an outer loop)."""

    def __init__(self):
        self.read = 0  # events indexed so far
        self.runs: dict[tuple, list[list[list]]] = {}  # (block, op) -> runs, oldest first
        self.begins: dict[tuple, list[list[int]]] = {}  # (block, op) -> per run, its steps' begin indexes
        self.run_ts: dict[tuple, set] = {}  # (block, op) -> the timesteps of its latest run
        self.by_scope: dict[int, tuple[list, int]] = {}  # step scope -> (its run, its position there)

    def update(self, events) -> None:
        for i in range(self.read, len(events)):
            e = events[i]
            if e.kind == "step_begin":
                self._begin(i, e)
            elif e.kind == "step_end":
                self._end(i, e)
        self.read = len(events)

    def _begin(self, i, e) -> None:
        key = (e.block, e.op)
        runs = self.runs.setdefault(key, [])
        ts = self.run_ts.get(key)
        if not runs or (runs[-1][-1][3] is not None and e.timestep in ts):
            runs.append([])
            self.begins.setdefault(key, []).append([])
            ts = self.run_ts[key] = set()
        run = runs[-1]
        self.by_scope[e.scope] = (run, len(run))
        run.append([e.timestep, e.scope, i, None])
        self.begins[key][-1].append(i)
        ts.add(e.timestep)

    def _end(self, i, e) -> None:
        runs = self.runs.get((e.block, e.op))
        if runs and runs[-1][-1][1] == e.scope:
            runs[-1][-1][3] = i

    def steps(self, key, last: int) -> list[StepRecord]:
        """The steps of loop op `key` in its latest run begun at or before event `last`, as they stood then."""
        begins = self.begins.get(key, [])
        r = bisect.bisect_right([b[0] for b in begins], last) - 1
        if r < 0:
            return []
        n = bisect.bisect_right(begins[r], last)
        return [StepRecord(t, s, b, e if e is not None and e <= last else None, j)
                for j, (t, s, b, e) in enumerate(self.runs[key][r][:n])]

    def previous(self, scope: int, last: int) -> list | None:
        """The step before step scope `scope` in the same run, when it had ended by event `last`."""
        run, pos = self.by_scope.get(scope, (None, 0))
        if run is None or pos == 0:
            return None
        prev = run[pos - 1]
        return prev if prev[3] is not None and prev[3] <= last else None

