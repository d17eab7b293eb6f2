"""The walk that writes gradient ops: a block's ops in reverse from the targets, each op's rule (grad_rules.py)
asked for its grad op descs, contributions to one gradient renamed and summed, every desc bound and checked
before the first is appended. `append_grad_ops` for block 0 (backward.py's entry points), `append_block_backward`
for a control-flow op's sub-block (its rule in kernelcore/grad/control_flow.py calls it)."""
from __future__ import annotations

from collections import OrderedDict, defaultdict

from ..errors import ProgramError
from ..ir import attrs as attrlib
from ..ir import op_roles
from ..ir.program import Block, Variable
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import get_op_def
from .grad_rules import (DIFFERENTIABLE_TYPES, EMPTY_VAR, GRAD_SUFFIX, NO_GRAD, GradContext, GradOp, NoGradientError,
                         grad_name, grad_rule, is_float, strip_grad_suffix)


def append_grad_ops(block: Block, targets, seeds: list[GradOp], sources: set | None,
                    no_grad: set) -> dict[str, str]:
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
            r = cache[name] = v is not None and v.type in DIFFERENTIABLE_TYPES and is_float(v.dtype)
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
    values.setdefault("op_role", op_roles.BACKWARD)
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
        _set_attr(desc, "op_role", opdef.attr_spec("op_role").type, op_roles.BACKWARD)
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
