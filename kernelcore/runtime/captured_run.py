"""A block run on a GPU as a replayed CUDA graph, where nothing watches the run.

Op by op, each kernel launch waits on Python: the host sets the pace of a small model. A CUDA graph records a
block's launches once (cupy.cuda.Stream.begin_capture / end_capture) and replays them with one call, the kernels
reading and writing the same device buffers each time. So a run may replay only where nothing needs the ops one
at a time: no observer (trace, debugger, watch), no pause, no NaN check, the whole block, fetched values copied to
the host (a replay overwrites the buffers a fetched device array would share). Where any of that holds, or the
block has control flow or random draws (a replay would draw the same numbers), the run goes op by op, unchanged
(the rnn op, a generator stepping through its timesteps without a sub-block, is captured where it has no dropout):
stepping works as before, and the next unobserved run replays again with whatever values the stepped run left.

The life of a block on one scope: its first unobserved run goes op by op (CuPy compiles its kernels, the memory
pool warms up); the second is captured and then launched; later ones replay. The ops between the block's feed ops
and its fetch ops are captured; those run op by op around the graph. What the captured ops read before writing
(the feeds, the parameters) are the graph's input buffers: a run copies a changed value into its buffer first
(a device copy), and the graph ends by copying what it wrote of them (an updated parameter, a running statistic)
back into them, so the next replay starts from the new state. Anything that fails inside the capture (a read
back to the host, a value that is not an array) puts every variable back as it was and leaves the block op by op
for good on that scope; the run itself then goes op by op.

On the strict stand-in (kernelcore/testing/strict_cuda.py) a capture records each device operation and a replay
redoes them on the same buffers, so the logic is tested without a GPU. On a GPU every allocation made during the
capture is kept for the graph's life (`using_allocator`), so no buffer the graph writes is handed to anything else.
"""
from __future__ import annotations

import weakref

from . import fast_paths

UNTRIED, CAPTURED, REFUSED = "untried", "captured", "refused"
FEED_OPS, FETCH_OPS = frozenset({"feed"}), frozenset({"fetch", "fetch_v2"})
# ops that draw random numbers without a `seed` attribute (those with one are found by it): a replay would repeat
# their draws, and on a GPU nothing would say so
UNSEEDED_DRAWS = frozenset({"bernoulli", "multinomial", "poisson", "standard_gamma"})
# ops whose `seed` serves one attribute alone: they draw only where it is above 0 (rnn: dropout between layers)
DRAWS_WHERE_POSITIVE = {"rnn": "dropout_prob"}
# generator kernels without a sub-block: their steps read and write only the op's own inputs and outputs (and
# step scopes of their own, made and dropped inside the run), so a graph holds them like any op; other generator
# kernels (while, conditional_block, recurrent) run blocks whose reads the op's names do not list
SELF_CONTAINED_STEPS = frozenset({"rnn"})


def keeps_steps_in_training(op) -> bool:
    """Whether a training run of the op keeps its step scopes for its gradient (rnn without is_test)."""
    return op.type in SELF_CONTAINED_STEPS and not op.attrs.get("is_test")


def draws_random(op) -> bool:
    if op.type in DRAWS_WHERE_POSITIVE:
        p = op.attrs.get(DRAWS_WHERE_POSITIVE[op.type])
        return not isinstance(p, (int, float)) or p > 0
    return "seed" in op.attrs or op.type in UNSEEDED_DRAWS


class _Captured:
    """One block on one scope: where it stands, and once captured, its graph and buffers."""

    __slots__ = ("state", "runs", "graph", "stream", "inputs", "outputs", "kept")

    def __init__(self):
        self.state, self.runs = UNTRIED, 0
        self.graph = self.stream = None
        self.inputs: dict = {}    # name -> the device buffer the graph reads (and, for state, writes back)
        self.outputs: dict = {}   # name -> the array the graph writes
        self.kept: list = []      # what the capture allocated, held for the graph's life


# Each graph is for one kind of run: training or inference (batch_norm and dropout run other kernels in each),
# and one set of input shapes and dtypes (a graph's buffers have fixed sizes: an epoch's last, smaller batch gets
# a graph of its own). At most MAX_GRAPHS per block and scope; runs of any further kind go op by op.
MAX_GRAPHS = 4


class _ScopeGraphs:
    __slots__ = ("graphs", "last")

    def __init__(self):
        self.graphs: dict = {}  # (training, the inputs' (shape, dtype)s) -> _Captured
        self.last: dict = {}    # training -> the _Captured its last run used


# prepared block -> {scope: _ScopeGraphs}, both weak: a dropped program or scope takes its graphs with it
_BY_BLOCK: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def state_of(prepared, scope, training: bool = False) -> _Captured | None:
    """The graph state the last training (or inference) run of a block on a scope used, or None where none did."""
    graphs = _BY_BLOCK.get(prepared, {}).get(scope)
    return None if graphs is None else graphs.last.get(bool(training))


def may_replay(run, whole_run: bool) -> bool:
    """Whether this run may go through a graph at all: a GPU place that can capture, fast paths on, nothing
    watching or pausing, the whole block, values fetched to the host."""
    return (whole_run and run.place.kind == "gpu" and not run.observers and not run.pausing
            and not run.check_nan_inf and fast_paths.enabled() and hasattr(getattr(run.xp, "cuda", None), "Stream"))


def captured_span(prepared) -> tuple[int, int] | None:
    """(first, end) of the ops a graph may hold: those between the leading feed ops and the trailing fetch ops,
    or None where one of them cannot be captured (control flow, random draws) or there is none."""
    ops = prepared.ops
    first, end = 0, len(ops)
    while first < end and ops[first].type in FEED_OPS:
        first += 1
    while end > first and ops[end - 1].type in FETCH_OPS:
        end -= 1
    inner = ops[first:end]
    if not inner or any((op.is_gen and op.type not in SELF_CONTAINED_STEPS) or draws_random(op)
                        or op.type in FEED_OPS | FETCH_OPS for op in inner):
        return None
    return first, end


def read_and_written(ops) -> tuple[list, list]:
    """(names read before any op of `ops` writes them, names written), each in first-use order."""
    read, written, seen_written = [], [], set()
    for op in ops:
        for n in op.in_names:
            if n not in seen_written and n not in read:
                read.append(n)
        for n in op.out_names:
            if n not in seen_written:
                seen_written.add(n)
                written.append(n)
    return read, written


def ran(run, prepared, scope, whole_run: bool, op_by_op) -> bool:
    """Run the block through its graph where it may (capturing it first where it is due); True where it ran so,
    False where the caller runs it op by op. `op_by_op(begin, end)` is the executor's loop over ops [begin, end)
    (a generator that yields only to pause, which these runs never do)."""
    def run_ops(begin, end):
        for _ in op_by_op(begin, end):
            pass
    if not may_replay(run, whole_run):
        return False
    plan = _plan(prepared)
    if plan is None:
        return False
    first, end, read, keeps_steps = plan
    if keeps_steps and run.training:  # its step scopes, kept for the gradient, are Python objects a graph cannot
        return False                  # hold; a capture would leave the scopes it made behind
    run_ops(0, first)  # the feed ops: what they write is read by the graph
    graphs = _BY_BLOCK.setdefault(prepared, weakref.WeakKeyDictionary()).setdefault(scope, _ScopeGraphs())
    key = (bool(run.training), tuple(_kind(run.xp, _value(scope, n)) for n in read))
    cap = graphs.graphs.get(key)
    if cap is None:
        if len(graphs.graphs) >= MAX_GRAPHS:
            run_ops(first, len(prepared.ops))
            return True
        cap = graphs.graphs[key] = _Captured()
    graphs.last[key[0]] = cap
    cap.runs += 1
    if cap.state == REFUSED or (cap.state == UNTRIED and cap.runs < 2):  # the first run warms up op by op
        run_ops(first, len(prepared.ops))
        return True
    if cap.state == UNTRIED:
        if not _capture(run.xp, prepared, scope, cap, first, end, run_ops):
            run_ops(first, len(prepared.ops))
            return True
    elif not _replay(run.xp, scope, cap):
        cap.state = REFUSED
        run_ops(first, len(prepared.ops))
        return True
    run_ops(end, len(prepared.ops))
    return True


_PLANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # prepared block -> (first, end, read) or None


def _plan(prepared):
    """(first, end, names read, whether a training run keeps step scopes) of the ops a graph may hold, made once
    per prepared block; None: none."""
    if prepared not in _PLANS:
        span = captured_span(prepared)
        if span is None:
            _PLANS[prepared] = None
        else:
            inner = prepared.ops[span[0]:span[1]]
            _PLANS[prepared] = (*span, read_and_written(inner)[0], any(map(keeps_steps_in_training, inner)))
    return _PLANS[prepared]


def _kind(xp, value):
    """What a graph's input buffer must match: a device array's (shape, dtype), else the value's type."""
    return (value.shape, value.dtype.str) if _is_device_array(xp, value) else type(value)


def _capture(xp, prepared, scope, cap: _Captured, first: int, end: int, run_ops) -> bool:
    read, written = read_and_written(prepared.ops[first:end])
    before = {n: _value(scope, n) for n in read + written}
    if not all(_is_device_array(xp, before[n]) for n in read):
        cap.state = REFUSED
        return False
    stream = xp.cuda.Stream(non_blocking=False)  # a blocking stream: ordered with the fetches after it
    kept: list = []
    try:
        with _keeping_allocations(xp, kept), stream:
            stream.begin_capture(_relaxed_mode(xp))
            try:
                run_ops(first, end)
                outputs = {n: _value(scope, n) for n in written}
                if not all(_is_device_array(xp, v) or _empty_record(v) for v in outputs.values()):
                    raise TypeError("a captured op wrote a value that is not a device array")
                for n in read:  # the state the graph updates goes back into its input buffer
                    if n in outputs and outputs[n] is not before[n]:
                        before[n][...] = outputs[n]
            finally:
                graph = stream.end_capture()
    except Exception:
        for n, v in before.items():
            _set(scope, n, v)
        cap.state = REFUSED
        return False
    cap.graph, cap.stream, cap.kept, cap.state = graph, stream, kept, CAPTURED
    cap.inputs = {n: before[n] for n in read}
    cap.outputs = {n: v for n, v in outputs.items() if n not in cap.inputs}
    graph.launch(stream)
    _bind(scope, cap)
    return True


def _relaxed_mode(xp):
    """CUDA's relaxed capture mode: the memory pool may still call cudaMalloc while a block is captured (a sync or
    a copy to the host is refused in every mode, and sends the block op by op)."""
    return getattr(getattr(xp.cuda, "runtime", None), "streamCaptureModeRelaxed", None)


def _replay(xp, scope, cap: _Captured) -> bool:
    for n, buf in cap.inputs.items():
        v = _value(scope, n)
        if v is buf:
            continue
        if not _is_device_array(xp, v) or v.shape != buf.shape or v.dtype != buf.dtype:
            return False
        buf[...] = v  # a device copy into what the graph reads
    cap.graph.launch(cap.stream)
    _bind(scope, cap)
    return True


def _bind(scope, cap: _Captured) -> None:
    for n, v in cap.inputs.items():
        _set(scope, n, v)
    for n, v in cap.outputs.items():
        _set(scope, n, v)


def _value(scope, name):
    var = scope.find_var(name)
    return None if var is None else var.value


def _set(scope, name, value) -> None:
    var = scope.find_var(name)
    if var is not None:
        var.value = value


def _is_device_array(xp, v) -> bool:
    return isinstance(v, xp.ndarray)


def _empty_record(v) -> bool:
    """An empty container that is not an array: what an op writes of its run for a later op where the run kept
    nothing (the rnn op's Reserve in an inference run), the same on every replay."""
    return not hasattr(v, "shape") and hasattr(v, "__len__") and len(v) == 0


class _keeping_allocations:
    """Inside: every device allocation is also held in `kept` (CuPy's using_allocator), so that memory the
    capture used is never handed to another array while the graph that writes it lives. The stand-in allocates
    with NumPy and needs nothing."""

    def __init__(self, xp, kept: list):
        self.xp, self.kept, self.inner = xp, kept, None

    def __enter__(self):
        using = getattr(self.xp.cuda, "using_allocator", None)
        if using is None:
            return self
        malloc = self.xp.get_default_memory_pool().malloc
        kept = self.kept

        def allocate(size):
            ptr = malloc(size)
            kept.append(ptr)
            return ptr
        self.inner = using(allocate)
        self.inner.__enter__()
        return self

    def __exit__(self, *exc):
        if self.inner is not None:
            self.inner.__exit__(*exc)
