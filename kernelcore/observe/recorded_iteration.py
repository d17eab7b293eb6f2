"""What the flight recorder (recorder.py) keeps of one iteration: the values it started from and, while kept, its
trace; and the watch hit it reports."""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.events import RECORD_HEAD, RECORD_VALUES
from .trace import Trace


@dataclass(frozen=True)
class RecorderHit:
    watch: int
    iteration: int
    order: int            # the op record's position in its iteration (0: the first op that ran)
    block: int
    op: int
    op_type: str
    timestep: int | None
    var: str
    message: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


class Iteration:
    """One run of the recorded program: the values it started from and (while kept) its trace."""

    def __init__(self, index: int, scope_id: int, keep: bool, items: list | None = None):
        self.index, self.scope_id = index, scope_id
        self._initial: dict | None = None
        self.items = items  # background=True: the run's events and op records as they came (a trace once kept)
        self.start: dict | None = None  # background=True: the scope's values when the run began (before feeds)
        self.rows = None  # background=True: its rows (iteration_summaries.IterationRows) until they are settled
        self.trace = Trace(retain="references") if keep and items is None else None
        self.keep_record = self.trace.op_recorder(RECORD_VALUES) if self.trace is not None else None
        self.first_event = 0
        self.ops = 0
        self.summaries: dict[int, tuple] = {}  # id of an array summarised in this iteration -> (it, its table row)

    @property
    def initial(self) -> dict | None:
        """name -> value when the iteration's first op ran (what the ops read before anything wrote it
        included)."""
        if self._initial is None and self.start is not None and self.items is not None:
            self._initial = _initial_values(self.start, self.items, self.scope_id)
        return self._initial

    @initial.setter
    def initial(self, values: dict) -> None:
        self._initial = values


def _initial_values(start: dict, items: list, scope_id: int) -> dict:
    """The values a run started from: the scope's when it began, and each variable the run's ops read in that
    scope before any op wrote it as it was read (the feeds, bound after the run began, included)."""
    initial, written = dict(start), set()
    for rec in items:
        if type(rec) is not tuple:
            continue
        op = rec[3]
        if rec[4] == scope_id:
            for (_, name), value in zip(op.in_pairs, rec[RECORD_HEAD:RECORD_HEAD + len(op.in_pairs)]):
                if name not in written:
                    initial[name] = value
                    written.add(name)  # read first: the value it started with
        written.update(name for _, name in op.out_pairs)
    return initial
