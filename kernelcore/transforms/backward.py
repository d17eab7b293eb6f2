"""append_backward and gradients: gradient ops appended to a program, as Paddle's backward writes them.

Seed 002: gradient operations exist only in training programs; they are appended here, when asked,
never built along with the forward ops. The result is the program Paddle's `append_backward` writes
(base/backward.py), op for op:

1. the loss gradient `<loss>@GRAD` is seeded by a `fill_constant` of 1.0 (op_role backward|loss, 257)
   shaped like the loss (0-d or [1]; a loss of any other shape, taken as the sum of its elements, is
   seeded by fill_any_like(loss, 1.0), which Paddle does not do), and the loss op is marked
   forward|loss (256);
2. the ops are walked in reverse; an op gets gradient ops (its rule, kernelcore/grad/) when one of its
   outputs has a gradient coming and one of its inputs needs one. Gradient variables are
   `<name>@GRAD`, shaped like `<name>`;
3. an output gradient that no later op produces, but that a grad op reads, is filled with zeros
   (`fill_any_like`, value 0), as Paddle does for split outputs nobody uses;
4. a variable used by several ops gets each contribution under a renamed variable
   (`x@GRAD@RENAME@block0@0`, `@1`, ...) and a `sum` op accumulating them into `x@GRAD`, placed
   before the first grad op that reads it (Paddle's _addup_repetitive_outputs_);
5. the last op writing each parameter's gradient gets op_role_var = [param, grad, ...].

Which inputs need a gradient: floating-point variables that are not `stop_gradient`, not in
no_grad_set, and either read by no earlier op's output (leaves) or computed from one that needs a
gradient through differentiable ops. So, unlike Paddle, a branch that only reaches no-gradient
variables gets no grad ops at all (Paddle keeps e.g. a tanh_grad whose result nothing reads).
Integer variables (labels, ids) never get one.

An op on that path with no gradient rule raises NoGradientError naming it.

Control flow (kernelcore/grad/control_flow.py): the rule of a recurrent, while or conditional_block op
makes a grad sub-block (a kid of the block its grad op goes into, forward_block_idx = the op's sub-block)
and fills it with `append_block_backward`, this same machinery run over the sub-block's ops from the names
whose gradients the grad op supplies at run time. Variables are looked up as Paddle's
BlockDesc::FindVarRecursive does (`_find`: a block's forward block, then its parent), so a grad block
sees the step block's variables; a grad block declares its own gradient variables. If a failure stops
append_backward after such blocks were made, they are removed again.
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from ..ir import attrs as attrlib
from ..ir import dtypes
from ..errors import ProgramError
from ..ir.program import Block, Operator, Variable
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import In, Out, get_op_def, register_op

GRAD_SUFFIX = "@GRAD"
EMPTY_VAR = "@EMPTY@"  # Paddle's kEmptyVarName: a position of a duplicable grad slot that needs no grad


class _NoGrad:
    """The table entry of an op that has no gradient."""

    def __repr__(self) -> str:
        return "NO_GRAD"


NO_GRAD = _NoGrad()


def grad_name(name: str) -> str:
    return name + GRAD_SUFFIX


@dataclass
class GradOp:
    """One op desc a rule asks for. `copy_attrs`: start from every attribute of the forward op
    (Paddle's `SetAttrMap(Attrs())`); `attrs` are then set on top."""
    type: str
    inputs: dict[str, list[str]]
    outputs: dict[str, list[str]]
    attrs: dict = field(default_factory=dict)
    copy_attrs: bool = False
    fwd: object = None  # the forward Operator, filled by backward

    def input_arg_names(self) -> list[str]:
        return [n for s in sorted(self.inputs) for n in self.inputs[s]]

    def output_arg_names(self) -> list[str]:
        return [n for s in sorted(self.outputs) for n in self.outputs[s]]

    def rename(self, old: str, new: str) -> None:
        for slots in (self.inputs, self.outputs):
            for s, names in slots.items():
                slots[s] = [new if n == old else n for n in names]


class GradContext:
    """What a rule sees of its forward op (Paddle's GradOpDescMakerBase).

    `needs_grad(name)` says whether a forward input wants a gradient; `input_grad(slot)` gives the
    gradient names for an input slot (the ones not wanted dropped, or EMPTY_VAR in their place with
    drop_empty=False); `output_grad(slot)` gives the gradient names of an output slot. backward fills
    in zeros for an output gradient that no later op produces. `grad_block` is the block the grad ops
    go into (the op's own block, or a grad sub-block when the op sits inside a control-flow block);
    control-flow rules hang their own grad sub-blocks under it, as Paddle does."""

    def __init__(self, op, needs_grad: Callable[[str], bool], grad_block=None):
        self.op = op
        self.type = op.type
        self.needs_grad = needs_grad
        self.grad_block = grad_block if grad_block is not None else op.block

    def input(self, slot: str) -> list[str]:
        return self.op.input(slot)

    def output(self, slot: str) -> list[str]:
        return self.op.output(slot)

    def has_input(self, slot: str) -> bool:
        return bool(self.op.input(slot))

    def attr(self, name: str, default=None):
        return self.op.attr(name, default)

    def input_grad(self, slot: str, drop_empty: bool = True) -> list[str]:
        names = [grad_name(n) if self.needs_grad(n) else EMPTY_VAR for n in self.op.input(slot)]
        if drop_empty or all(n == EMPTY_VAR for n in names):
            return [n for n in names if n != EMPTY_VAR]
        return names

    def output_grad(self, slot: str) -> list[str]:
        return [grad_name(n) for n in self.op.output(slot)]

    def grad_op(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None,
                copy_attrs: bool = False) -> GradOp:
        return GradOp(type, {k: list(v) for k, v in inputs.items()}, {k: list(v) for k, v in outputs.items()},
                      dict(attrs or {}), copy_attrs)


Rule = Callable[[GradContext], list]
# op type -> its rule, or NO_GRAD. The one table: rule modules (kernelcore/grad/) register here.
GRAD_RULES: dict[str, Rule | _NoGrad] = {}


def grad_rule(op_type: str):
    """The gradient rule of `op_type`: a callable, NO_GRAD, or None when nobody has written one."""
    return GRAD_RULES.get(op_type)


# -- standard rules: one <type>_grad op ---------------------------------------------------------------
def _infer_like(sources: dict[str, tuple[str, bool]]):
    """Infer each `S@GRAD` output from an input slot: sources maps the output slot to (input slot,
    drop_first_dim) (drop_first_dim for XShape, which is [0] + X.dims)."""
    def infer(ic):
        for out_slot, (in_slot, drop_first) in sources.items():
            for i in range(len(ic.output_names(out_slot))):
                if i >= len(ic.input_names(in_slot)):
                    break
                shape = ic.shape(in_slot, i)
                ic.set_output(out_slot, shape[1:] if drop_first else shape, ic.dtype(in_slot, i), i)
    return infer


def standard(fwd_type: str, *, ins=(), outs=(), out_grads=("Out",), in_grads=("X",), comment: str = "",
             infer_from: dict | None = None, drop_empty: bool = True):
    """Register `<fwd_type>_grad` and the rule that writes it; return the grad op's OpDef (for .kernel()).

    ins: forward input slots the grad op reads; outs: forward output slots it reads; out_grads: output
    slots whose gradients it reads (`<slot>@GRAD` inputs); in_grads: input slots whose gradients it
    writes (`<slot>@GRAD` outputs, each dispensable: an unwanted one is left empty)."""
    fwd = get_op_def(fwd_type)
    in_slots = []
    for s in ins:
        f = fwd.input_slot(s)
        in_slots.append(In(s, f"forward input: {f.comment}", duplicable=f.duplicable, dispensable=f.dispensable))
    for s in outs:
        f = fwd.output_slot(s)
        in_slots.append(In(s, f"forward output: {f.comment}", duplicable=f.duplicable))
    for s in out_grads:
        f = fwd.output_slot(s)
        in_slots.append(In(grad_name(s), f"the gradient of the loss with respect to {s}", duplicable=f.duplicable))
    out_slots = []
    for s in in_grads:
        f = fwd.input_slot(s)
        out_slots.append(Out(grad_name(s), f"the gradient of the loss with respect to {s}, {s}'s shape",
                             duplicable=f.duplicable, dispensable=True))
    sources = {grad_name(s): (s, False) for s in in_grads if s in ins}
    sources.update(infer_from or {})
    opdef = register_op(f"{fwd_type}_grad", comment or f"The gradient of {fwd_type}.", inputs=in_slots,
                        outputs=out_slots, attrs=[a for a in fwd.attrs.values()],
                        infer_shape=_infer_like(sources))

    def rule(g: GradContext) -> list[GradOp]:
        for s in outs:  # an intermediate output the forward op did not write (XShape, Mask): say so
            if not g.output(s):
                raise ProgramError(f"this {fwd_type} op writes no {s} output, which {fwd_type}_grad reads; "
                                   f"a {fwd_type} op that is to be differentiated must name a variable for {s}")
        inputs = {s: g.input(s) for s in ins}
        inputs.update({s: g.output(s) for s in outs})
        inputs.update({grad_name(s): g.output_grad(s) for s in out_grads})
        outputs = {grad_name(s): g.input_grad(s, drop_empty) for s in in_grads}
        return [g.grad_op(f"{fwd_type}_grad", inputs, outputs, copy_attrs=True)]

    rule.__name__ = f"{fwd_type}_grad_rule"
    GRAD_RULES[fwd_type] = rule
    return opdef


def rule(fwd_type: str):
    """Decorator: a hand-written rule (ops whose gradient is a forward op, or several ops)."""
    def register(fn):
        GRAD_RULES[fwd_type] = fn
        return fn
    return register


def no_grad(*types: str) -> None:
    for t in types:
        GRAD_RULES[t] = NO_GRAD


# -- kernel helpers -----------------------------------------------------------------------------------
def wanted(ctx, slot: str) -> bool:
    """Whether the running grad op names a variable for output `slot` (an unwanted grad is skipped)."""
    return any(n != EMPTY_VAR for n in ctx.output_names(slot))


def is_float(dtype_enum) -> bool:
    return dtype_enum in dtypes.FLOATS or dtype_enum in (dtypes.VT.COMPLEX64, dtypes.VT.COMPLEX128)


VT = pb.VarType
# Paddle's OpRole values (op_proto_maker.h)
OP_ROLE_FORWARD, OP_ROLE_BACKWARD, OP_ROLE_OPTIMIZE, OP_ROLE_LOSS = 0, 1, 2, 256
# Variables that can carry a gradient (a tensor array's gradient flows through the ops that read it)
_DIFFERENTIABLE_TYPES = (VT.LOD_TENSOR, VT.SELECTED_ROWS)


class NoGradientError(ProgramError, NotImplementedError):
    """An op on the path from the loss to a variable that needs a gradient has no gradient rule."""


def strip_grad_suffix(name: str) -> str:
    """x@GRAD -> x, x@GRAD@RENAME@block0@1 -> x (Paddle's _strip_grad_suffix_)."""
    i = name.find(GRAD_SUFFIX)
    return name[:i] if i >= 0 else name


# ---------------------------------------------------------------------------------------------------
def append_backward(loss: Variable, parameter_list=None, no_grad_set=None) -> list[tuple[Variable, Variable]]:
    """Append the gradient ops of `loss` to its program; return [(parameter, gradient)].

    parameter_list: the parameters (Variables or names) to report; default every trainable parameter
    of block 0 (is_parameter and not stop_gradient), in declaration order, as Paddle lists them (its
    optimizers then sort the pairs by parameter name before writing update ops). Gradients are
    computed for every variable that needs one, whether reported or not (as in Paddle).
    no_grad_set: variables (or names) that get no gradient, on top of the stop_gradient ones.
    """
    block = _target_block([loss], "append_backward")
    no_grad = _names(no_grad_set, "no_grad_set")
    loss_op = _producer(block, loss.name)
    grad_map = _append(block, [loss], [_loss_seed(loss)], sources=None, no_grad=no_grad)
    if loss_op is not None:
        loss_op.set_attr("op_role", OP_ROLE_FORWARD | OP_ROLE_LOSS)

    if parameter_list is None:
        params = [v.name for v in block.vars if v.is_parameter and not v.stop_gradient]
    else:
        params = _names(parameter_list, "parameter_list", ordered=True)
    pairs = []
    for p in params:
        g = grad_map.get(p)
        if g is None:
            continue
        pairs.append((block.var(p), block.var(g)))
        writer = _producer(block, g)
        if writer is not None:
            writer.set_attr("op_role_var", [p, g] + list(writer.attr("op_role_var", []) or []))
    return pairs


def gradients(targets, inputs, target_gradients=None, no_grad_set=None) -> list[Variable | None]:
    """Append the ops computing d(sum of targets)/d(input) for each input; return the gradient
    Variables (None for an input the targets do not depend on). Paddle's `paddle.static.gradients`:
    each target's gradient is seeded with ones shaped like it (fill_any_like), or with the matching
    entry of target_gradients. Only ops on a path from `inputs` to `targets` get grad ops; the inputs
    get gradients even when they are stop_gradient (they were asked for)."""
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    block = _target_block(targets, "gradients")
    if target_gradients is None:
        target_gradients = [None] * len(targets)
    target_gradients = list(target_gradients) if isinstance(target_gradients, (list, tuple)) else [target_gradients]
    if len(target_gradients) != len(targets):
        raise ProgramError(f"gradients: {len(targets)} targets but {len(target_gradients)} target_gradients")
    seeds = []
    for t, tg in zip(targets, target_gradients):
        if tg is None:
            seeds.append(GradOp("fill_any_like", {"X": [t.name]}, {"Out": [grad_name(t.name)]},
                                {"value": 1.0, "dtype": t.dtype}))
        else:
            seeds.append(GradOp("assign", {"X": [tg.name if isinstance(tg, Variable) else tg]},
                                {"Out": [grad_name(t.name)]}))
    no_grad = _names(no_grad_set, "no_grad_set")
    names = _names(inputs, "inputs", ordered=True)
    grad_map = _append(block, targets, seeds, sources=set(names) - no_grad, no_grad=no_grad)
    return [block.var(grad_map[n]) if n in grad_map else None for n in names]


# ---------------------------------------------------------------------------------------------------
def _target_block(targets, who: str) -> Block:
    if not targets or not all(isinstance(t, Variable) for t in targets):
        raise ProgramError(f"{who} takes program Variables as targets, got {targets!r:.80}")
    block = targets[0].block
    if block.idx != 0:
        raise ProgramError(f"{who}: the target {targets[0].name!r} lives in block {block.idx}; only targets in "
                           f"block 0 are supported (gradients inside control-flow blocks come with their ops)")
    for t in targets:
        if t.block != block:
            raise ProgramError(f"{who}: targets {targets[0].name!r} and {t.name!r} are in different blocks")
    return block


def _names(items, what: str, ordered: bool = False):
    if items is None:
        return [] if ordered else set()
    if isinstance(items, (str, Variable)):
        items = [items]
    out = []
    for v in items:
        if isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str):
            out.append(v)
        else:
            raise TypeError(f"{what} takes Variables or variable names, got {type(v).__name__} {v!r:.60}")
    return out if ordered else set(out)


def _producer(block: Block, name: str) -> Operator | None:
    """The last op of `block` that writes `name`."""
    for op in reversed(block.ops):
        if name in op.output_arg_names:
            return op
    return None


def _loss_seed(loss: Variable) -> GradOp:
    """Paddle seeds a 0-d or [1] loss with fill_constant of its shape. kernelcore also takes a loss of
    any other shape (meaning the sum of its elements): seeded with ones shaped like it at run time."""
    shape = loss.shape
    if shape is not None and (tuple(shape) in ((), (1,))):
        return GradOp("fill_constant", {}, {"Out": [grad_name(loss.name)]},
                      {"shape": list(shape), "value": 1.0, "dtype": loss.dtype, "force_cpu": False,
                       "op_role": OP_ROLE_BACKWARD | OP_ROLE_LOSS})
    return GradOp("fill_any_like", {"X": [loss.name]}, {"Out": [grad_name(loss.name)]},
                  {"value": 1.0, "dtype": -1, "op_role": OP_ROLE_BACKWARD | OP_ROLE_LOSS})


def _append(block: Block, targets, seeds: list[GradOp], sources: set | None, no_grad: set) -> dict[str, str]:
    """Build, arrange and append the grad ops; return {forward name: gradient variable name}.

    Control-flow rules append grad sub-blocks while the specs are built; if anything fails before the
    ops are emitted, those blocks are removed again, so a failure leaves the program as it was."""
    program = block.program
    nblocks = program.num_blocks
    try:
        specs = _grad_specs(block, [t.name for t in targets], seeds, sources, no_grad, block)
        specs = _addup_repetitive_outputs(specs, block.idx)
        renames = _rename_existing(block, specs)
        declared = set()
        for s in specs:  # every check before the first edit: a failure leaves the program as it was
            _check(block, s, declared)
    except BaseException:
        if program.num_blocks > nblocks:
            del program.desc.blocks[nblocks:]
            program.touch()
        raise
    for s in specs:
        _emit(block, s)
    program.touch()

    grad_map = {}
    for s in specs:
        for n in s.output_arg_names():
            if n == EMPTY_VAR:
                continue
            fwd = strip_grad_suffix(n)
            final = renames.get(grad_name(fwd), grad_name(fwd))
            if n == final:
                grad_map[fwd] = n
    return grad_map


def append_block_backward(fwd_block: Block, grad_block: Block, targets, given, sources, *,
                          given_local: bool) -> set[str]:
    """The grad ops of a control-flow op's sub-block, appended to its grad sub-block (Paddle's
    `_append_backward_ops_` on a sub_block): the ops of `fwd_block` are walked in reverse from `targets`
    (names inside the block whose gradients the control-flow grad op supplies at run time: `given`, the
    `<target>@GRAD` names) towards `sources` (names that need a gradient: step inputs, memories, loop
    variables, outer parameters). Gradient variables are declared in `grad_block` itself, so at run time
    they are local to the scope the grad block runs in; `grad_block.forward_block_idx` must name
    `fwd_block`. Returns the names the grad ops write.

    A target that ops of the block also read (a state the step uses again, say) gets a gradient from
    those ops as well as the given one: the contributions written before the given gradient is first read
    are renamed and summed with it, into the given name itself when the grad op binds it locally
    (`given_local`: recurrent_grad, while_grad), else into a fresh name that its readers then use
    (conditional_block_grad, whose given gradients live outside). Writes after the first read make a new
    version and are left alone: a loop variable of `while` is read at the start of the body and written at
    its end, so in the grad block its given gradient (for the value after the iteration) is read first, and
    the gradient written later is the one for the value before it."""
    specs = _grad_specs(fwd_block, list(targets), [], set(sources), set(), grad_block)
    specs = _merge_given(specs, list(given), fwd_block.idx, given_local)
    specs = _addup_repetitive_outputs(specs, fwd_block.idx)
    declared = set(given)
    for s in specs:
        _check(grad_block, s, declared)
    for s in specs:
        _emit(grad_block, s)
    grad_block.program.touch()
    return {n for s in specs for n in s.output_arg_names() if n != EMPTY_VAR}


def _merge_given(specs: list[GradOp], given: list[str], block_idx: int, in_place: bool) -> list[GradOp]:
    """Add each given gradient that grad ops of the block also write to those contributions (see
    append_block_backward)."""
    for n in given:
        reads = [i for i, s in enumerate(specs) if n in s.input_arg_names()]
        first = reads[0] if reads else len(specs)
        writers = [s for s in specs[:first] if n in s.output_arg_names()]
        if not writers:
            continue
        parts, k = [n], 0
        for s in writers:
            for slot, names in s.outputs.items():
                renamed = []
                for x in names:
                    if x == n:
                        x = f"{n}@RENAME@block{block_idx}@{k}"
                        k += 1
                        parts.append(x)
                    renamed.append(x)
                s.outputs[slot] = renamed
        readers = []  # the readers of this version: up to the next op that writes n (it may read it too)
        for i in range(first, len(specs)):
            if n in specs[i].input_arg_names():
                readers.append(i)
            if n in specs[i].output_arg_names():
                break
        if not readers and not in_place:
            continue  # nobody inside reads it, and nobody outside collects it
        total = n if in_place else f"{n}@RENAME@block{block_idx}@{k}"
        if not in_place:
            for i in readers:
                specs[i].inputs = {slot: [total if x == n else x for x in names]
                                   for slot, names in specs[i].inputs.items()}
        specs.insert(first, GradOp("sum", {"X": parts}, {"Out": [total]}, fwd=writers[-1].fwd))
    return specs


def _grad_specs(block: Block, target_names: list[str], seeds: list[GradOp], sources: set | None, no_grad: set,
                grad_block: Block) -> list[GradOp]:
    """The grad op descs for `block`'s ops, seeds first, in the order they run (before renaming and
    accumulation). `grad_block` is where they will go (rules of control-flow ops hang their grad
    sub-blocks under it)."""
    ops = block.ops
    stop = set(no_grad) | {v.name for v in block.vars if v.stop_gradient}
    cache: dict[str, bool] = {}

    def differentiable(name: str) -> bool:
        r = cache.get(name)
        if r is None:
            v = block.find_var_recursive(name)
            r = cache[name] = v is not None and v.type in _DIFFERENTIABLE_TYPES and is_float(v.dtype)
        return r

    # Forward: which variables need a gradient.
    req: set[str] = set()
    written: set[str] = set()

    def is_req(n: str) -> bool:
        if n in req:
            return True
        if sources is not None:
            return n in sources
        return n not in written and n not in stop and differentiable(n)

    for op in ops:
        ins = op.input_arg_names
        if grad_rule(op.type) is not NO_GRAD and any(is_req(n) for n in ins):
            req.update(n for n in ins if is_req(n))
            req.update(o for o in op.output_arg_names if o not in stop and differentiable(o))
        written.update(op.output_arg_names)

    # Backward: each op whose outputs have gradients coming and whose inputs need some, in reverse.
    needed = set(target_names)
    specs: list[GradOp] = list(seeds)
    loss_name = target_names[0]
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        outs = op.output_arg_names
        if not any(o in needed for o in outs):
            continue
        r = grad_rule(op.type)
        if r is NO_GRAD:
            continue
        want = [n for n in dict.fromkeys(op.input_arg_names) if n in req]
        if not want:
            continue
        if r is None:
            raise NoGradientError(
                f"op {op.type!r} (block {block.idx}, op #{i}) lies on the path from {loss_name!r} to variables "
                f"that need a gradient ({', '.join(want)}), but kernelcore has no gradient rule for {op.type!r} "
                f"yet (kernelcore/grad/ holds the rules). Mark those inputs stop_gradient or pass them in "
                f"no_grad_set to cut the path.")
        made = [s for s in r(GradContext(op, req.__contains__, grad_block))
                if any(n != EMPTY_VAR for n in s.output_arg_names())]
        missing = {grad_name(o): o for o in outs if o not in needed}
        filled = set()
        for s in made:
            s.fwd = op
            for n in s.input_arg_names():
                if n in missing and n not in filled:  # an output gradient nobody produces: zeros
                    specs.append(GradOp("fill_any_like", {"X": [missing[n]]}, {"Out": [n]},
                                        {"value": 0.0, "dtype": -1}, fwd=op))
                    filled.add(n)
            specs.append(s)
            needed.update(strip_grad_suffix(n) for n in s.output_arg_names() if n != EMPTY_VAR)
    return specs


def _addup_repetitive_outputs(specs: list[GradOp], block_idx: int) -> list[GradOp]:
    """Paddle's _addup_repetitive_outputs_: the second writer of a gradient renames the first one's
    output to `<g>@RENAME@block<b>@0` and its own to `@1` (then `@2`, ...); a `sum` into `<g>` goes
    before the first op that reads `<g>`, or at the end. Slots are visited in name order, as Paddle's
    C++ OpDesc keeps them."""
    pending: OrderedDict[int, list[GradOp]] = OrderedDict()
    count: dict[str, int] = defaultdict(int)
    renamed: dict[str, list[str]] = defaultdict(list)
    start: dict[str, int] = {}

    def new_name(name):
        n = f"{name}@RENAME@block{block_idx}@{count[name]}"
        count[name] += 1
        return n

    def add_sum(idx, name, fwd):
        pending.setdefault(idx, []).append(GradOp("sum", {"X": list(renamed[name])}, {"Out": [name]}, fwd=fwd))
        renamed[name] = [name]

    for idx, d in enumerate(specs):
        for name in d.input_arg_names():
            if GRAD_SUFFIX in name and len(renamed[name]) > 1:
                add_sum(idx, name, d.fwd)
        ins = set(d.input_arg_names())
        slots = sorted(d.outputs)
        for si, slot in enumerate(slots):
            for k in range(len(d.outputs[slot])):
                name = d.outputs[slot][k]
                if GRAD_SUFFIX not in name or name == EMPTY_VAR or name in ins:
                    continue  # not a gradient, an empty position, or in place
                if not renamed[name]:
                    renamed[name] = [name]
                    start[name] = idx
                    continue
                if len(renamed[name]) == 1:  # the second writer: rename the first one's output too
                    first = new_name(name)
                    renamed[name][0] = first
                    for j in range(start[name], idx):
                        specs[j].rename(name, first)
                    for lst in pending.values():
                        for s in lst:
                            s.rename(name, first)
                    for earlier in slots[:si]:
                        d.outputs[earlier] = [first if x == name else x for x in d.outputs[earlier]]
                    d.outputs[slot][:k] = [first if x == name else x for x in d.outputs[slot][:k]]
                later = new_name(name)
                d.outputs[slot][k] = later
                renamed[name].append(later)
    for name in list(renamed):
        if len(renamed[name]) > 1:
            add_sum(len(specs), name, None)
    out = list(specs)
    for idx in reversed(list(pending)):
        for i, s in enumerate(pending[idx]):
            out.insert(idx + i, s)
    return out


def _rename_existing(block: Block, specs: list[GradOp]) -> dict[str, str]:
    """A gradient name the block already declares (an earlier append_backward) gets a fresh one, as
    Paddle's _rename_grad_ does; later readers follow."""
    var_map: dict[str, str] = {}
    for s in specs:
        for slot, names in s.inputs.items():
            s.inputs[slot] = [var_map.get(n, n) for n in names]
        for slot, names in s.outputs.items():
            new = []
            for n in names:
                if n not in var_map and GRAD_SUFFIX in n and block.find_var_recursive(n) is not None:
                    var_map[n] = block.program.unique_name(n)
                new.append(var_map.get(n, n))
            s.outputs[slot] = new
    return var_map


def _find(block: Block, name: str) -> Variable | None:
    """`name` as Paddle's BlockDesc::FindVarRecursive finds it: breadth first through each block's forward
    block (a grad sub-block sees the variables of the step block it differentiates), then its parent."""
    frontier, seen = [block], set()
    while frontier:
        b = frontier.pop(0)
        if b.idx in seen:
            continue
        seen.add(b.idx)
        if b.has_var(name):
            return b.var(name)
        if b.forward_block_idx >= 0:
            frontier.append(b.program.block(b.forward_block_idx))
        if b.parent is not None:
            frontier.append(b.parent)
    return None


def _where(spec: GradOp) -> str:
    return f"gradient op {spec.type!r}" + (f" (for {spec.fwd.type!r})" if spec.fwd is not None else "")


def _bind(spec: GradOp):
    """A rule's op desc bound against the grad op's OpProto (registry.OpDef.bind: slots, argument counts,
    attributes), the forward op's attributes first when the rule copies them."""
    opdef = get_op_def(spec.type)
    values, types = {}, {}
    if spec.copy_attrs and spec.fwd is not None:
        for a in spec.fwd.desc.attrs:
            if opdef.attr_spec(a.name) is not None:
                values[a.name], types[a.name] = attrlib.read(a), a.type
    for name, value in spec.attrs.items():
        values[name] = value
        types.pop(name, None)
    values.setdefault("op_role", OP_ROLE_BACKWARD)
    return opdef.bind(spec.inputs, spec.outputs, values, _where(spec), attr_types=types)


def _check(block: Block, spec: GradOp, declared: set) -> None:
    """A rule's op desc against the grad op's OpProto, and its inputs against what exists (in the block
    or as outputs of earlier grad ops, collected in `declared`)."""
    _bind(spec)
    for n in (n for names in spec.inputs.values() for n in names):
        if n not in declared and _find(block, n) is None:
            raise ProgramError(f"{_where(spec)}: input {n!r} is declared nowhere (a gradient rule bug)")
    declared.update(n for names in spec.outputs.values() for n in names)


def _emit(block: Block, spec: GradOp) -> None:
    """Append one (checked) grad op desc: forward attributes copied verbatim when the rule asks (those
    kernelcore does not declare included), the bound attributes on top, op_role set; its output variables
    declared like their forward variables (shape and dtype)."""
    opdef = get_op_def(spec.type)
    bound = _bind(spec)
    for n in (n for names in spec.outputs.values() for n in names):
        if n != EMPTY_VAR and not block.has_var(n):  # a grad sub-block declares its own, as Paddle's
            _declare_grad_var(block, n)

    desc = pb.OpDesc(type=spec.type)
    for slot in sorted(spec.inputs):
        desc.inputs.add(parameter=slot, arguments=spec.inputs[slot])
    for slot in sorted(spec.outputs):
        desc.outputs.add(parameter=slot, arguments=spec.outputs[slot])
    if spec.copy_attrs and spec.fwd is not None:
        for a in spec.fwd.desc.attrs:
            desc.attrs.add().CopyFrom(a)
    for name, value in spec.attrs.items():
        _set_attr(desc, name, opdef.attr_spec(name).type, bound.given[name])
    if "op_role" not in spec.attrs:
        _set_attr(desc, "op_role", opdef.attr_spec("op_role").type, OP_ROLE_BACKWARD)
    present = {a.name for a in desc.attrs}
    for name, value in bound.attrs.items():
        if name not in present:
            _set_attr(desc, name, opdef.attrs[name].type, value)
    block.desc.ops.append(desc)


def _set_attr(desc: pb.OpDesc, name: str, attr_type: int, value) -> None:
    for i, a in enumerate(desc.attrs):
        if a.name == name:
            del desc.attrs[i]
            break
    attrlib.write(desc.attrs.add(), name, attr_type, value)


def _declare_grad_var(block: Block, name: str) -> None:
    """A gradient variable takes its forward variable's shape and dtype (Paddle's
    _infer_var_data_type_shape_)."""
    fwd = _find(block, strip_grad_suffix(name))
    if fwd is not None and fwd.shape is not None:
        block.create_var(name, fwd.shape, fwd.dtype)
    else:
        block.create_var(name, None, "float32")


__all__ = ["EMPTY_VAR", "GRAD_RULES", "GRAD_SUFFIX", "GradContext", "GradOp", "NO_GRAD", "NoGradientError",
           "append_backward", "append_block_backward", "grad_name", "grad_rule", "gradients", "is_float", "no_grad",
           "rule", "standard", "strip_grad_suffix", "wanted"]
