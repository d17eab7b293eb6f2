"""The gradient rule table and what rules are written with: `GRAD_RULES` (op type -> rule, or NO_GRAD), which
the rule modules in kernelcore/grad/ fill; `standard` / `rule` / `no_grad` to register; `GradOp`, the op desc a
rule asks for; `GradContext`, what a rule sees of its forward op. The walk that calls the rules is grad_walk.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import ProgramError
from ..ir import dtypes
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


# Variables that can carry a gradient (a tensor array's: a list of its entries' gradients, summed entry by entry)
DIFFERENTIABLE_TYPES = (pb.VarType.LOD_TENSOR, pb.VarType.SELECTED_ROWS, pb.VarType.LOD_TENSOR_ARRAY)


class NoGradientError(ProgramError, NotImplementedError):
    """An op on the path from the loss to a variable that needs a gradient has no gradient rule."""


def strip_grad_suffix(name: str) -> str:
    """x@GRAD -> x, x@GRAD@RENAME@block0@1 -> x (Paddle's _strip_grad_suffix_)."""
    i = name.find(GRAD_SUFFIX)
    return name[:i] if i >= 0 else name
