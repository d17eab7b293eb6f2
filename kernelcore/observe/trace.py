"""Recording runs: `with kc.trace() as tr: exe.run(...)` collects every event.

A Trace is an observer of the executor. What it keeps of values is a policy:
  "none"        events only: op types, names, scopes, times; no shapes or values
  "shapes"      + each op's inputs/outputs as (slot, name, shape, dtype)   [default]
  "references"  + references to each op's output values. Kernels never mutate
                a value anything else holds (an optimizer's update lands in its
                parameter's array only where nothing else holds it), so a
                reference is the value as it was then, at no copy cost; it keeps
                those arrays alive (the memory they hold)
  "copies"      + copies of the output values (safe even if user code mutates
                arrays it fed; costs a copy per op)
`max_bytes` caps the retained values: past it, the oldest values are released
(their events remain) and `dropped_values` counts them.

Traces save to a documented JSON form (`schema`/`version` below) and export to
the Chrome trace event format, which Perfetto and chrome://tracing open.
"""
from __future__ import annotations

import collections
import contextlib
import json
from pathlib import Path
from typing import Iterable, Iterator

import math

from ..errors import LoadError, TraceError  # noqa: F401  - LoadError: TraceError's base, kept for callers
from ..runtime.events import KINDS, RECORD_HEAD, RECORD_HEAD_ONLY, RECORD_METAS, Event, compact, op_run_event
from ..runtime.executor import add_observer, remove_observer
from .perfetto import to_trace_events

SCHEMA = "kernelcore.trace"
VERSION = 2
# Versions this kernelcore reads: 1 had no vars_create events (every creation was a var_create), so a
# version-1 trace is a version-2 trace that happens not to use them.
READS_VERSIONS = (1, 2)
POLICIES = ("none", "shapes", "references", "copies")
MAX_TRACE_BYTES = 1 << 30  # a trace file larger than this is refused before it is read


class Trace:
    """An ordered list of events, and what was retained of the values."""

    def __init__(self, events: Iterable[Event] = (), *, retain: str = "shapes", max_bytes: int | None = None,
                 meta: dict | None = None):
        if retain not in POLICIES:
            raise ValueError(f"retain must be one of {POLICIES}, got {retain!r}")
        self._items: list = list(events)  # Events, and compact op records turned into Events on access
        self.retain = retain
        self.max_bytes = max_bytes
        self.meta = dict(meta or {})
        self.retained_bytes = 0
        self.dropped_values = 0
        self._with_values: collections.deque[int] = collections.deque()  # event positions holding values
        self._pending = 0  # op records at the end of _items not yet compacted
        self._first_raw = 0  # items before this index are all Events already
        self._window_start = 0  # where the records not yet compacted begin

    @staticmethod
    def of_items(items: list, retain: str) -> Trace:
        """A finished trace over a list of events and op records an observer collected as the executor handed
        them (the flight recorder's background=True), taken as it is."""
        trace = _CollectedTrace(retain=retain)
        trace._items = items
        trace._bytes = None if trace.keep_values else 0  # counted when first asked
        return trace

    # what the executor should gather for this observer
    @property
    def keep_values(self) -> bool:
        return self.retain in ("references", "copies")

    @property
    def keep_shapes(self) -> bool:
        return self.retain != "none"

    @property
    def events(self) -> list[Event]:
        items = self._items
        keep = self.keep_values
        for i in range(self._first_raw, len(items)):  # only what arrived (or changed) since last time
            it = items[i]
            if type(it) is tuple:
                items[i] = op_run_event(it, keep)
        self._first_raw = self._window_start = len(items)
        self._pending = 0
        return items

    # Under "shapes" the executor measures what it needs itself (events.BlockRun). Only when another
    # observer of the same run wants the values do records arrive holding references; they then hold
    # them for at most WINDOW ops before they are replaced by (shape, dtype), so memory stays bounded.
    WINDOW = 256

    def op_recorder(self, record_mode: str):
        """The callable the executor hands each op record to, given what the records carry
        (events.RECORD_*): where they already hold what this trace keeps, the list's own append."""
        if self.retain == "none":
            return self._items.append if record_mode == RECORD_HEAD_ONLY else self._record_head
        if self.retain == "shapes" and record_mode == RECORD_METAS:
            return self._items.append
        if self.retain == "references" and self.max_bytes is None:
            return self._record_reference  # a debug session's default: no cap, so nothing to queue
        return self.record_op

    def plain_recorder(self):
        """What takes events that carry no values and no inputs/outputs (scope, step and creation events):
        they are kept as they come, so the list's own append."""
        return self._items.append

    def _record_head(self, rec) -> None:
        self._items.append(rec[:RECORD_HEAD])

    def record_op(self, rec) -> None:
        """The executor's fast path for op_run: keep its compact record (events.py)."""
        items = self._items
        if self.retain == "shapes":
            items.append(rec)
            self._pending += 1
            if self._pending >= self.WINDOW:
                self._compact_pending()
        elif self.retain == "none":
            items.append(rec[:RECORD_HEAD])
        else:
            if self.retain == "copies":
                rec = rec[:RECORD_HEAD] + tuple(_copy(v) for v in rec[RECORD_HEAD:])
            self._with_values.append(len(items))
            self._record_reference(rec)
            if self.max_bytes is not None:
                self._enforce_cap()

    def _record_reference(self, rec) -> None:
        """Keep a record holding values and count the bytes of its outputs (all of record_op for
        "references" with no cap)."""
        n_out = len(rec[3].out_pairs)
        if n_out == 1:
            self.retained_bytes += _nbytes(rec[-1])
        elif n_out:
            self.retained_bytes += sum(_nbytes(v) for v in rec[len(rec) - n_out:])
        self._items.append(rec)

    def _compact_pending(self) -> None:
        items = self._items
        for i in range(self._window_start, len(items)):  # events are interleaved with the records
            if type(items[i]) is tuple:
                items[i] = compact(items[i])
        self._pending = 0
        self._window_start = len(items)

    def __call__(self, ev: Event) -> None:
        """Events other than op_run (and op_run from producers without the fast path)."""
        if ev.values is not None and not self.keep_values:
            ev = ev._replace(values=None)
        if self.retain == "none" and (ev.inputs or ev.outputs):
            ev = ev._replace(inputs=(), outputs=())
        self._items.append(ev)
        if ev.kind == "run_end" and self._pending:
            self._compact_pending()  # a finished run's values are released at once

    def _enforce_cap(self) -> None:
        if self.max_bytes is None:
            return
        while self.retained_bytes > self.max_bytes and self._with_values:
            i = self._with_values.popleft()
            it = self._items[i]
            if type(it) is tuple:
                n_out = len(it[3].out_pairs)
                self.retained_bytes -= sum(_nbytes(v) for v in it[len(it) - n_out:]) if n_out else 0
                self._items[i] = compact(it)
                self._first_raw = min(self._first_raw, i)
            else:
                self.retained_bytes -= sum(_nbytes(v) for _, v in it.values or ())
                self._items[i] = it._replace(values=None)
            self.dropped_values += 1

    # -- looking -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __getitem__(self, i):
        return self.events[i]

    def filter(self, kind: str | Iterable[str] | None = None, op_type: str | None = None,
               scope: int | None = None, block: int | None = None) -> list[Event]:
        kinds = {kind} if isinstance(kind, str) else set(kind) if kind is not None else None
        return [e for e in self.events
                if (kinds is None or e.kind in kinds) and (op_type is None or e.op_type == op_type)
                and (scope is None or e.scope == scope) and (block is None or e.block == block)]

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def summary(self) -> str:
        counts = collections.Counter(e.kind for e in self.events)
        ops = self.filter("op_run")
        total = sum(e.dur_ns or 0 for e in ops) / 1e6
        return (f"{len(self.events)} events ({', '.join(f'{k} {counts[k]}' for k in KINDS if counts[k])}); "
                f"{total:.3f} ms in {len(ops)} op runs")

    def __repr__(self) -> str:
        return f"<Trace {self.summary()}>"

    def op_times(self) -> dict:
        """{op type: (runs, total ns)} over the op_run events."""
        per_type = collections.defaultdict(lambda: [0, 0])
        for e in self.events:
            if e.kind == "op_run":
                per_type[e.op_type][0] += 1
                per_type[e.op_type][1] += e.dur_ns or 0
        return {t: tuple(v) for t, v in per_type.items()}

    # -- files -------------------------------------------------------------------
    def to_json(self, limit: int | None = None) -> dict:
        """The documented JSON form. With `limit`, only the first `limit` events, and "truncated": how many
        were left out (what a notebook output or a widget carries)."""
        events = self.events
        out = {"schema": SCHEMA, "version": VERSION, "retain": self.retain, "meta": dict(self.meta),
               "events": [e.to_json() for e in (events if limit is None else events[:limit])]}
        if limit is not None and len(events) > limit:
            out["truncated"] = len(events) - limit
        return out

    def save(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=None, separators=(",", ":")))

    @classmethod
    def from_json(cls, data: dict, source: str = "trace") -> Trace:
        """A Trace from its JSON form, checked against the schema: anything else is a TraceError (a
        LoadError) naming the field, never a bare TypeError from inside."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise TraceError(f"{source}: not a kernelcore trace (expected schema {SCHEMA!r})")
        if data.get("version") not in READS_VERSIONS:
            raise TraceError(f"{source}: trace version {_short(data.get('version'))}; this kernelcore reads "
                             f"versions {', '.join(map(str, READS_VERSIONS))}")
        raw = data.get("events", [])
        if not isinstance(raw, list):
            raise TraceError(f"{source}: 'events' must be a list of events, got {type(raw).__name__}")
        meta = data.get("meta") or {}
        if not isinstance(meta, dict):
            raise TraceError(f"{source}: 'meta' must be an object, got {type(meta).__name__}")
        retain = data.get("retain", "shapes")
        if retain not in POLICIES:
            raise TraceError(f"{source}: 'retain' must be one of {list(POLICIES)}, got {_short(retain)}")
        events = [_event_from_json(d, i, source) for i, d in enumerate(raw)]
        return cls(events, retain="shapes" if retain in ("references", "copies") else retain, meta=meta)

    @classmethod
    def load(cls, path) -> Trace:
        try:
            size = Path(path).stat().st_size
            if size > MAX_TRACE_BYTES:
                raise TraceError(f"{path}: {size} bytes; kernelcore reads traces up to {MAX_TRACE_BYTES}")
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, ValueError) as e:  # JSONDecodeError is a ValueError
            raise TraceError(f"{path}: cannot read a trace ({e})") from None
        except RecursionError:
            raise TraceError(f"{path}: cannot read a trace (JSON nested too deeply)") from None
        return cls.from_json(data, str(path))

    def to_chrome(self, marks=()) -> dict:
        """The Trace Event Format (Perfetto, chrome://tracing): a track per block with ops and nested timesteps,
        flow arrows from writers to readers, errors and `marks` ((event index, label): breakpoint stops,
        watchpoint hits) as instants, a live-tensor-bytes counter. See kernelcore/observe/perfetto.py."""
        return to_trace_events(self.events, marks)

    def save_chrome(self, path, marks=()) -> None:
        Path(path).write_text(json.dumps(self.to_chrome(marks)))


class _CollectedTrace(Trace):
    """Trace.of_items's: the bytes its records hold are counted when first asked (most such traces are dropped
    unread, and the count is a walk over every output)."""

    @property
    def retained_bytes(self) -> int:
        if self._bytes is None:
            self._bytes = sum(_nbytes(v) for rec in self._items if type(rec) is tuple
                              for v in rec[len(rec) - len(rec[3].out_pairs):])
        return self._bytes

    @retained_bytes.setter
    def retained_bytes(self, count: int) -> None:
        self._bytes = count


def _nbytes(value) -> int:
    return int(getattr(value, "nbytes", 0) or 0)


def _copy(value):
    return value.copy() if hasattr(value, "shape") and hasattr(value, "copy") else value


@contextlib.contextmanager
def trace(retain: str = "shapes", max_bytes: int | None = None) -> Iterator[Trace]:
    """Record every run inside the block: `with kc.trace() as tr: exe.run(...)`."""
    tr = Trace(retain=retain, max_bytes=max_bytes)
    token = add_observer(tr)
    try:
        yield tr
    finally:
        remove_observer(token)


# ---------------------------------------------------------------------------------------------------------
# the schema of one event (docs/frontend-contract.md): field -> what it may hold
_INT_FIELDS = ("seq", "t_ns", "scope", "block", "op", "dur_ns", "parent_scope", "timestep")
_STR_FIELDS = ("kind", "op_type", "name", "kernel", "place", "message")
_REQUIRED = ("seq", "kind", "t_ns")
_INT_LIMIT = 1 << 63


def _short(v, n: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= n else text[: n - 1] + "…"


def _event_from_json(d, i: int, source: str) -> Event:
    where = f"{source}: event {i}"
    if not isinstance(d, dict):
        raise TraceError(f"{where} must be an object, got {type(d).__name__}")
    for f in _REQUIRED:
        if f not in d:
            raise TraceError(f"{where} has no {f!r}")
    kw = {}
    for f in _INT_FIELDS:
        v = d.get(f)
        if v is None:
            continue
        if isinstance(v, float) and math.isfinite(v) and v == int(v):
            v = int(v)  # 1.0 from a JSON writer that knows no ints
        if type(v) is not int or not -_INT_LIMIT <= v < _INT_LIMIT:
            raise TraceError(f"{where}: {f!r} must be an integer, got {_short(v)}")
        kw[f] = v
    for f in _STR_FIELDS:
        v = d.get(f)
        if v is None:
            continue
        if type(v) is not str:
            raise TraceError(f"{where}: {f!r} must be a string, got {type(v).__name__}")
        kw[f] = v
    if kw["kind"] not in KINDS:
        raise TraceError(f"{where} has unknown kind {_short(kw['kind'])}")
    for f in ("inputs", "outputs"):
        v = d.get(f)
        if v is None:
            continue
        if not isinstance(v, list):
            raise TraceError(f"{where}: {f!r} must be a list of [slot, name, shape, dtype], got {type(v).__name__}")
        kw[f] = tuple(_io_from_json(x, f"{where}: {f}[{k}]") for k, x in enumerate(v))
    names = d.get("names")
    if names is not None:  # vars_create (version 2)
        if not isinstance(names, list) or not all(type(n) is str for n in names):
            raise TraceError(f"{where}: 'names' must be a list of variable names")
        kw["names"] = tuple(names)
    return Event(**kw)


def _io_from_json(x, where: str) -> tuple:
    if not isinstance(x, list) or len(x) != 4:
        raise TraceError(f"{where} must be [slot, name, shape, dtype], got {_short(x)}")
    slot, name, shape, dtype = x
    if type(slot) is not str or type(name) is not str:
        raise TraceError(f"{where}: slot and name must be strings")
    if shape is not None:
        if not isinstance(shape, list) or len(shape) > 64 or any(
                type(s) is not int or not -_INT_LIMIT <= s < _INT_LIMIT for s in shape):
            raise TraceError(f"{where}: shape must be a list of at most 64 integers or null, got {_short(shape)}")
        shape = tuple(shape)
    if dtype is not None and type(dtype) is not str:
        raise TraceError(f"{where}: dtype must be a string or null, got {type(dtype).__name__}")
    return (slot, name, shape, dtype)
