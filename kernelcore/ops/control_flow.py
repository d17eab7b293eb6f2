"""Control flow (seeds 001 and 002): ops that run a sub-block in kid scopes.

  recurrent          a for loop over dim 0 of its `inputs`: one step scope per timestep
  while              runs its sub-block while the Condition variable holds true
  conditional_block  runs its sub-block once, or not at all (cond's branches, IfElse's branches)
  split_lod_tensor / merge_lod_tensor   the per-instance split and merge around IfElse's two branches
  select_input       picks one of cond's branch results      } registered here only when no op family
  logical_not        cond's predicate for the false branch    } imported before this one has them
  rnn_memory_helper  an identity copy old StaticRNN programs wrap states and outputs in
  fill_constant_batch_size_like   StaticRNN.memory(shape=..., batch_ref=...) boots a state with it
                                  (here only when no other op family has it)

Names, slots and attributes are Paddle's (layouts measured in tests/paddle_oracle/NOTES.md).

Scopes. Every control-flow op makes its kid scopes with `ctx.new_scope`, so each is a scope_push event and
carries its origin (op, block, op index, timestep). When the executor runs with training=True the kid scopes
are kept (the backward pass reads them) and listed in the op's step-scopes variable; otherwise each is
dropped as soon as nothing needs it, so memory stays flat however many steps run. Scopes a previous run of
the same op kept are dropped when the op runs again (Paddle's ClearStepScopes): the scope hierarchy lives
for one minibatch.

Decision, recurrent: the scopes are kept when `ctx.training and is_train`. Paddle's `is_train` defaults to
true and every program Paddle or StaticRNN writes carries true, so "training or is_train" would keep every
step scope of every inference run; is_train=false still forces dropping (with it Paddle allows no backward).
The same holds for while (`ctx.training and not is_test`) and conditional_block (`ctx.training`).

Decision, while: a loop whose condition never turns false is stopped with an error after
`max_while_iterations()` iterations (default 1,000,000; `set_max_while_iterations(None)` removes the
cap; an observed run, e.g. one being traced, stops at `max_while_iterations_observed()`, default 100,000,
as each iteration's ~5 events cost ~300 bytes of trace) or after `max_while_seconds()` seconds of one
`while` op (default 60; `set_max_while_seconds(None)` removes it; a run a debugger pauses has no time
budget, as the user's think time would count). A debugger pausing inside the loop is the way to look at a
long loop; the budgets only turn a hung notebook cell (or a trace filling memory with the events of a loop
that never ends) into an error that names the op, its condition variable and the iteration count.
"""
from __future__ import annotations

import time as _time

from ..errors import KernelcoreError
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op

_MAX_WHILE_ITERATIONS: int | None = 1_000_000
_MAX_WHILE_ITERATIONS_OBSERVED: int | None = 100_000
_MAX_WHILE_SECONDS: float | None = 60.0
_CLOCK_EVERY = 256  # iterations between two looks at the clock


def max_while_iterations() -> int | None:
    return _MAX_WHILE_ITERATIONS


def set_max_while_iterations(n: int | None) -> int | None:
    """Cap the iterations of any `while` op (None: no cap). Returns the previous cap."""
    global _MAX_WHILE_ITERATIONS
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"the cap must be a positive int or None, got {n!r}")
    old, _MAX_WHILE_ITERATIONS = _MAX_WHILE_ITERATIONS, n
    return old


def max_while_iterations_observed() -> int | None:
    return _MAX_WHILE_ITERATIONS_OBSERVED


def set_max_while_iterations_observed(n: int | None) -> int | None:
    """Cap the iterations of any `while` op in a run with observers (a trace, a debugger); None: only the
    general cap applies. Returns the previous cap."""
    global _MAX_WHILE_ITERATIONS_OBSERVED
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"the cap must be a positive int or None, got {n!r}")
    old, _MAX_WHILE_ITERATIONS_OBSERVED = _MAX_WHILE_ITERATIONS_OBSERVED, n
    return old


def max_while_seconds() -> float | None:
    return _MAX_WHILE_SECONDS


def set_max_while_seconds(seconds: float | None) -> float | None:
    """Cap the wall time of any one `while` op's loop (None: no cap). Returns the previous cap."""
    global _MAX_WHILE_SECONDS
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or not seconds > 0):
        raise ValueError(f"the cap must be a positive number of seconds or None, got {seconds!r}")
    old, _MAX_WHILE_SECONDS = _MAX_WHILE_SECONDS, (float(seconds) if seconds is not None else None)
    return old


class ControlFlowError(KernelcoreError, RuntimeError):
    """A control-flow op met a condition, sequence or state it cannot run with (the executor adds the op)."""


SKIP_EAGER = Attr("skip_eager_deletion_vars", A.STRINGS,
                  "Paddle's garbage-collector hint: vars the sub-block must keep. kernelcore frees nothing "
                  "early, so it is accepted and ignored", [])


# ---------------------------------------------------------------------------------------------------------
def _drop_previous(ctx, slot: str) -> None:
    """Drop the kid scopes a previous run of this op kept (listed in its step-scopes variable)."""
    var = ctx.output_var(slot)
    old = var.value if var is not None else None
    if old:
        for s in old:
            if hasattr(s, "dropped") and not s.dropped:
                ctx.drop_scope(s)
        var.value = []


def _remember_on_failure(ctx, slot: str, scopes) -> None:
    """A failing sub-block leaves its scopes as they were (for debugging); list them in the op's
    step-scopes variable so the next run of the op drops them."""
    var = ctx.output_var(slot)
    if var is not None:
        var.value = [s for s in scopes if not s.dropped]


def _bind(ctx, scope, name: str, value) -> None:
    """Set `name` in a kid scope this op made (a step input, a carried state); ExecContext.bind_var
    reports it to observers so traces and time travel see it."""
    ctx.bind_var(scope, name, value)


def truth(ctx, value, what: str) -> bool:
    """The value of a one-element condition tensor."""
    if value is None:
        raise ControlFlowError(f"{what} holds no value: the op that computes it has not run")
    size = getattr(value, "size", None)
    if size is None:
        return bool(value)
    if size != 1:
        raise ControlFlowError(f"{what} must hold exactly one element (a bool scalar or [1]), "
                               f"got shape {list(value.shape)}")
    return bool(value.reshape(-1)[0])


# ---------------------------------------------------------------------------------------------------------
# recurrent
RECURRENT = register_op(
    "recurrent",
    "A static RNN: runs `sub_block` once per timestep t of the sequences in `inputs` (time-major, dim 0 = T), "
    "each in its own step scope, a kid of the op's scope. In step t the variable named like each input holds "
    "input[t]; each ex_states[k] holds initial_states[k] at the first step and states[k] of the previous step "
    "after it; parameters are read through the parent scope. After the step, each output variable (same name "
    "inside and outside) is copied into outputs[t]. With reverse, t runs from T-1 down to 0.",
    inputs=[In("inputs", "the sequences, time-major [T, ...]", duplicable=True),
            In("initial_states", "the states at the first step, one per ex_states entry", duplicable=True,
               dispensable=True),
            In("parameters", "outer variables the step block reads", duplicable=True, dispensable=True)],
    outputs=[Out("outputs", "the step outputs stacked over time, [T, ...]", duplicable=True),
             Out("step_scopes", "a STEP_SCOPES variable: the step scopes kept for the backward pass")],
    attrs=[Attr("sub_block", A.BLOCK, "the step block"),
           Attr("ex_states", A.STRINGS, "names, inside the step block, of the previous step's states", []),
           Attr("states", A.STRINGS, "names, inside the step block, of this step's states", []),
           Attr("has_states", A.BOOLEAN, "whether the op carries states", False),
           Attr("reverse", A.BOOLEAN, "run from the last timestep to the first", False),
           Attr("is_train", A.BOOLEAN, "false: never keep step scopes (no backward); true: keep them when "
                "the executor runs with training=True", True),
           SKIP_EAGER])


@RECURRENT.kernel()
def recurrent(ctx, ins, attrs):
    seqs, inits, _params = ins
    in_names = ctx.input_names("inputs")
    out_names = ctx.output_names("outputs")
    ex_states, states = attrs["ex_states"], attrs["states"]
    inits = inits or []
    if attrs["has_states"]:
        if not len(ex_states) == len(states) == len(inits):
            raise ControlFlowError(f"has_states: ex_states {ex_states}, states {states} and initial_states "
                                   f"({len(inits)} given) must have the same length")
    elif ex_states or states:
        raise ControlFlowError(f"ex_states {ex_states} / states {states} are set but has_states is false")
    for name, x in zip(in_names, seqs):
        if x is None:
            raise ControlFlowError(f"input {name!r} holds no value")
        if getattr(x, "ndim", 0) < 1:
            raise ControlFlowError(f"input {name!r} must be a time-major sequence [T, ...], got a 0-d value")
    T = int(seqs[0].shape[0])
    for name, x in zip(in_names, seqs):
        if x.shape[0] != T:
            raise ControlFlowError(f"inputs {in_names[0]!r} and {name!r} have different lengths "
                                   f"({T} and {x.shape[0]} timesteps)")
    if T == 0:
        raise ControlFlowError(f"input {in_names[0]!r} has 0 timesteps")
    for name, v in zip(ex_states, inits):
        if v is None:
            raise ControlFlowError(f"the initial state for {name!r} holds no value")

    keep = ctx.training and attrs["is_train"]
    step_names = list(in_names) + list(ex_states)  # what each step scope is given, in this order
    _drop_previous(ctx, "step_scopes")
    xp, block, reverse = ctx.xp, attrs["sub_block"], attrs["reverse"]
    outs = [None] * len(out_names)
    kept, prev = [], None
    live = []
    try:
        for i in range(T):
            t = T - 1 - i if reverse else i
            s = ctx.new_scope("recurrent step", t)
            live.append(s)
            ctx.step_event("step_begin", t, s)
            bound = [x[t] for x in seqs]  # views: kernels never mutate their inputs
            if ex_states:
                bound += inits if prev is None else [_state_of(prev, n, t) for n in states]
            ctx.bind_vars(s, step_names, bound)
            yield from ctx.run_block(block, s, timestep=t)
            for k, name in enumerate(out_names):
                v = s.find_var(name)
                val = v.value if v is not None else None
                if val is None:
                    raise ControlFlowError(f"the step block wrote no value to output {name!r} at timestep {t}")
                if outs[k] is None:
                    outs[k] = xp.empty((T,) + tuple(val.shape), dtype=val.dtype)
                elif tuple(val.shape) != outs[k].shape[1:]:
                    raise ControlFlowError(f"output {name!r} has shape {list(val.shape)} at timestep {t} but "
                                           f"{list(outs[k].shape[1:])} at the first step")
                outs[k][t] = val
            ctx.step_event("step_end", t, s)
            if keep:
                kept.append(s)
            elif prev is not None:
                ctx.drop_scope(prev)  # s already holds the states it needs from prev
                live.remove(prev)
            prev = s
    except BaseException:
        _remember_on_failure(ctx, "step_scopes", live)
        raise
    if not keep and prev is not None:
        ctx.drop_scope(prev)
    return (outs, kept)


def _state_of(scope, name: str, t: int):
    v = scope.find_var(name)
    if v is None or v.value is None:
        raise ControlFlowError(f"state {name!r} holds no value after the step before timestep {t}: "
                               f"the step block must write every name in `states`")
    return v.value


# ---------------------------------------------------------------------------------------------------------
# while
WHILE = register_op(
    "while",
    "Runs `sub_block` while the Condition variable holds true, each iteration in a fresh kid scope of the "
    "op's scope (timestep = the iteration count). The block writes the loop variables and the condition "
    "under their outer names, found through the parent scope.",
    inputs=[In("X", "outer variables the block reads", duplicable=True, dispensable=True),
            In("Condition", "a one-element bool variable, re-read before every iteration")],
    outputs=[Out("Out", "outer variables the block writes (it writes them itself)", duplicable=True,
                 dispensable=True),
             Out("StepScopes", "a STEP_SCOPES variable: the iteration scopes kept for the backward pass")],
    attrs=[Attr("sub_block", A.BLOCK, "the loop body"),
           Attr("is_test", A.BOOLEAN, "true: never keep the iteration scopes", False),
           SKIP_EAGER])


@WHILE.kernel()
def while_(ctx, ins, attrs):
    cond_name = ctx.input_names("Condition")[0]
    cond_var = ctx.scope.find_var(cond_name)
    keep = ctx.training and not attrs["is_test"]
    _drop_previous(ctx, "StepScopes")
    # With keep, each iteration scope also records the loop variables as they were when the iteration began
    # (Paddle does the same for while_grad); values are references, so this costs no copy.
    carried = [n for n in ctx.input_names("X") if n in set(ctx.output_names("Out"))] if keep else []
    cap = _MAX_WHILE_ITERATIONS
    observed_cap = _MAX_WHILE_ITERATIONS_OBSERVED if ctx.run.observers else None
    setter = "set_max_while_iterations"
    if observed_cap is not None and (cap is None or observed_cap < cap):
        cap, setter = observed_cap, "set_max_while_iterations_observed"
    seconds = None if ctx.run.pausing else _MAX_WHILE_SECONDS
    deadline = _time.monotonic() + seconds if seconds is not None else None
    block = attrs["sub_block"]
    kept, i = [], 0
    s = None
    try:
        while truth(ctx, cond_var.value, f"Condition {cond_name!r}"):
            if cap is not None and i >= cap:
                raise ControlFlowError(
                    f"the loop ran {cap} iterations and Condition {cond_name!r} is still true; if it should "
                    f"run longer, raise the cap: kernelcore.ops.control_flow.{setter}(n)")
            if deadline is not None and i % _CLOCK_EVERY == 0 and i and _time.monotonic() > deadline:
                raise ControlFlowError(
                    f"the loop ran {seconds:g} s ({i} iterations) and Condition {cond_name!r} is still true; "
                    f"if it should run longer, raise the budget: "
                    f"kernelcore.ops.control_flow.set_max_while_seconds(s)")
            s = ctx.new_scope("while iteration", i)
            ctx.step_event("step_begin", i, s)
            before = [(n, ctx.scope.find_var(n)) for n in carried]
            before = [(n, v.value) for n, v in before if v is not None]
            yield from ctx.run_block(block, s, timestep=i)
            ctx.step_event("step_end", i, s)
            if keep:
                local = set(s.local_var_names())
                for n, v in before:
                    if n not in local:
                        _bind(ctx, s, n, v)
                kept.append(s)
            else:
                ctx.drop_scope(s)
            s = None
            i += 1
    except BaseException:
        _remember_on_failure(ctx, "StepScopes", kept + ([s] if s is not None else []))
        raise
    return (None, kept)


# ---------------------------------------------------------------------------------------------------------
# conditional_block
CONDITIONAL_BLOCK = register_op(
    "conditional_block",
    "Runs `sub_block` once in a kid scope of the op's scope, or not at all. With is_scalar_condition it runs "
    "iff the one Cond value is true; otherwise (IfElse's branches) iff every Input tensor is non-empty, as "
    "in Paddle. The block writes its results into outer variables itself.",
    inputs=[In("Cond", "the condition: one bool scalar, or (not scalar) IfElse's mask", duplicable=True),
            In("Input", "outer variables the block reads", duplicable=True, dispensable=True)],
    outputs=[Out("Out", "outer variables the block writes", duplicable=True, dispensable=True),
             Out("Scope", "a STEP_SCOPES variable: the branch scope, kept for the backward pass")],
    attrs=[Attr("sub_block", A.BLOCK, "the branch block"),
           Attr("is_scalar_condition", A.BOOLEAN, "whether Cond is one bool scalar", False),
           SKIP_EAGER])


@CONDITIONAL_BLOCK.kernel()
def conditional_block(ctx, ins, attrs):
    conds, inputs = ins
    if attrs["is_scalar_condition"]:
        names = ctx.input_names("Cond")
        if len(conds) != 1:
            raise ControlFlowError(f"is_scalar_condition needs exactly one Cond variable, got {list(names)}")
        run = truth(ctx, conds[0], f"Cond {names[0]!r}")
    else:
        # Paddle: "whether to run depends on the input variables (Input)": all of them non-empty
        run = all(x is not None and getattr(x, "size", 1) != 0 for x in (inputs or []))
    _drop_previous(ctx, "Scope")
    if not run:
        return (None, [])
    s = ctx.new_scope("conditional_block branch")
    try:
        yield from ctx.run_block(attrs["sub_block"], s)
    except BaseException:
        _remember_on_failure(ctx, "Scope", [s])
        raise
    if ctx.training:
        return (None, [s])
    ctx.drop_scope(s)
    return (None, [])


# ---------------------------------------------------------------------------------------------------------
# IfElse's per-instance split and merge. kernelcore tensors carry no LoD, so both work on rows (dim 0),
# which is what Paddle does at level 0 of a tensor without LoD.
def _mask_rows(ctx, mask, what: str):
    xp = ctx.xp
    m = xp.asarray(mask)
    if m.ndim == 2 and m.shape[1] == 1:
        m = m.reshape(-1)
    if m.ndim != 1:
        raise ControlFlowError(f"Mask must be [N, 1] or [N], got shape {list(mask.shape)}")
    return m.astype(bool) if m.dtype != bool else m


def _infer_split(ic):
    shape, dt = ic.shape("X"), ic.dtype("X")
    rows = [-1] + list(shape[1:])
    ic.set_output("OutTrue", rows, dt)
    ic.set_output("OutFalse", rows, dt)


SPLIT_LOD_TENSOR = register_op(
    "split_lod_tensor",
    "OutTrue = the rows of X whose Mask entry is true, OutFalse = the other rows, each in order "
    "(IfElse.input). X has no LoD in kernelcore, so `level` only selects level 0.",
    inputs=[In("X", "the tensor to split by rows"), In("Mask", "bool [N, 1] (or [N]), one entry per row")],
    outputs=[Out("OutTrue", "X's rows where Mask is true"), Out("OutFalse", "X's rows where Mask is false")],
    attrs=[Attr("level", A.INT, "the LoD level to split at (0: rows)", 0)],
    infer_shape=_infer_split)


@SPLIT_LOD_TENSOR.kernel()
def split_lod_tensor(ctx, ins, attrs):
    x, mask = ins
    if attrs["level"] != 0:
        raise ControlFlowError(f"level {attrs['level']}: kernelcore tensors carry no LoD; only level 0 (rows)")
    m = _mask_rows(ctx, mask, "Mask")
    if getattr(x, "ndim", 0) < 1 or x.shape[0] != m.shape[0]:
        raise ControlFlowError(f"X has {x.shape[0] if getattr(x, 'ndim', 0) else 'no'} rows but Mask has "
                               f"{m.shape[0]} entries")
    return (x[m], x[~m])


def _infer_merge(ic):
    n = -1
    try:
        n = ic.shape("Mask")[0]
    except Exception:  # undeclared mask: rows unknown
        pass
    for slot in ("InTrue", "InFalse"):
        if ic.has_input(slot):
            shape = ic.shape(slot)
            ic.set_output("Out", [n] + list(shape[1:]), ic.dtype(slot))
            return


MERGE_LOD_TENSOR = register_op(
    "merge_lod_tensor",
    "Out row i = the next row of InTrue where Mask[i] is true, else the next row of InFalse: the inverse of "
    "split_lod_tensor (IfElse's result). A branch with no rows is not read. X is Paddle's LoD reference; "
    "without LoD only its presence is needed.",
    inputs=[In("X", "Paddle's LoD reference (IfElse passes the mask)"),
            In("Mask", "bool [N, 1] (or [N])"),
            In("InTrue", "the rows for true entries, in order"),
            In("InFalse", "the rows for false entries, in order")],
    outputs=[Out("Out", "N rows")],
    attrs=[Attr("level", A.INT, "the LoD level (0: rows)", 0)],
    infer_shape=_infer_merge)


@MERGE_LOD_TENSOR.kernel()
def merge_lod_tensor(ctx, ins, attrs):
    _x, mask, in_true, in_false = ins
    if attrs["level"] != 0:
        raise ControlFlowError(f"level {attrs['level']}: kernelcore tensors carry no LoD; only level 0 (rows)")
    xp = ctx.xp
    m = _mask_rows(ctx, mask, "Mask")
    n_true = int(m.sum())
    n_false = int(m.shape[0]) - n_true
    parts = []
    for name, val, n in (("InTrue", in_true, n_true), ("InFalse", in_false, n_false)):
        if n == 0:
            continue  # that branch has no rows (and may not have run at all)
        if val is None:
            raise ControlFlowError(f"{name} holds no value but Mask selects {n} rows from it: its branch did "
                                   f"not run")
        if getattr(val, "ndim", 0) < 1 or val.shape[0] != n:
            raise ControlFlowError(f"Mask selects {n} rows from {name} but it has "
                                   f"{val.shape[0] if getattr(val, 'ndim', 0) else 0}")
        parts.append((name, val))
    if not parts:
        # no rows at all: an empty result shaped like whichever branch value exists
        ref = next((v for v in (in_true, in_false) if v is not None), None)
        if ref is None:
            raise ControlFlowError("Mask is empty and neither InTrue nor InFalse holds a value")
        return (xp.empty((0,) + tuple(ref.shape[1:]), dtype=ref.dtype),)
    tail, dt = tuple(parts[0][1].shape[1:]), parts[0][1].dtype
    for name, val in parts[1:]:
        if tuple(val.shape[1:]) != tail:
            raise ControlFlowError(f"InTrue and InFalse rows differ in shape: {list(tail)} versus "
                                   f"{list(val.shape[1:])}")
        dt = xp.result_type(dt, val.dtype)
    out = xp.empty((m.shape[0],) + tail, dtype=dt)
    for name, val in parts:
        out[m if name == "InTrue" else ~m] = val
    return (out,)


# ---------------------------------------------------------------------------------------------------------
# cond's helpers
def _infer_select(ic):
    ic.set_output("Out", ic.shape("X", 0), ic.dtype("X", 0))

SELECT_INPUT = register_op(
    "select_input",
    "Out = X[Mask]: Mask is an int32 tensor with one element (cond writes cast(pred): 1 picks X[1], the "
    "true branch's result). Only the chosen entry needs a value.",
    inputs=[In("X", "the candidates", duplicable=True), In("Mask", "int32, one element: the index into X")],
    outputs=[Out("Out", "the chosen candidate")],
    infer_shape=_infer_select)

@SELECT_INPUT.kernel()
def select_input(ctx, ins, attrs):
    xs, mask = ins
    if mask is None or getattr(mask, "size", 1) != 1:
        raise ControlFlowError(f"Mask must hold one integer, got "
                               f"{'no value' if mask is None else f'shape {list(mask.shape)}'}")
    k = int(mask.reshape(-1)[0]) if hasattr(mask, "reshape") else int(mask)
    if not 0 <= k < len(xs):
        raise ControlFlowError(f"Mask is {k} but X has {len(xs)} entries")
    if xs[k] is None:
        name = ctx.input_names("X")[k]
        raise ControlFlowError(f"Mask picks X[{k}] ({name!r}), which holds no value: the branch that "
                               f"writes it did not run")
    return (xs[k],)  # a reference: nothing mutates it


# ---------------------------------------------------------------------------------------------------------
# StaticRNN's helpers
def _infer_same(ic):
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))


RNN_MEMORY_HELPER = register_op(
    "rnn_memory_helper",
    "Out = a copy of X (assign's semantics). Old StaticRNN programs wrap each state and step output in it; "
    "Paddle 2.6 and 3.x no longer register it.",
    inputs=[In("X", "the tensor to copy")], outputs=[Out("Out", "the copy")],
    attrs=[Attr("dtype", A.INT, "(VarType) X's data type; only describes X", VT.FP32)],
    infer_shape=_infer_same)


@RNN_MEMORY_HELPER.kernel()
def rnn_memory_helper(ctx, ins, attrs):
    return (ins[0],)  # values are never mutated, so sharing is as good as a copy
