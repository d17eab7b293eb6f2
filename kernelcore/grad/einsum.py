"""The gradient of einsum (kernelcore/ops/einsum.py): each operand's is the einsum of Out@GRAD with the other
operands into that operand's subscripts; a letter only that operand has is broadcast back, a dim it broadcast
(size 1) is summed."""
from __future__ import annotations

from ..ops.einsum import explicit
from ..transforms.backward import standard

EINSUM_GRAD = standard("einsum", ins=("Operands",), in_grads=("Operands",),
                       comment="Operands[i]@GRAD = einsum(Out@GRAD, the other operands -> operand i's subscripts).")


def _operand_grad(xp, i, ops, subs, out, g):
    mine = subs[i]
    if len(set(mine)) != len(mine):
        raise ValueError(f"einsum's gradient does not take a repeated subscript in one operand ({mine!r})")
    others = [s for j, s in enumerate(subs) if j != i]
    present = set(out).union(*others) if others else set(out)
    kept = "".join(c for c in mine if c in present)
    sizes = {}
    for s, o in zip(subs, ops):
        for c, n in zip(s, o.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    for c, n in zip(out, g.shape):
        sizes[c] = max(sizes.get(c, 1), n)
    operands = [g] + [o for j, o in enumerate(ops) if j != i]
    full = [xp.broadcast_to(o, tuple(sizes[c] for c in s)) for o, s in zip(operands, [out] + others)]
    part = xp.einsum(",".join([out] + others) + "->" + kept, *full)
    shape = tuple(sizes[c] if c in kept else 1 for c in mine)
    part = xp.broadcast_to(part.reshape(shape), tuple(sizes[c] for c in mine))
    target = ops[i].shape
    axes = tuple(d for d, n in enumerate(target) if n == 1 and part.shape[d] != 1)
    return (part.sum(axis=axes, keepdims=True) if axes else part.copy()).astype(ops[i].dtype, copy=False)


@EINSUM_GRAD.kernel()
def einsum_grad(ctx, ins, attrs):
    ops, g = ins
    subs, out = explicit(attrs["equation"], [o.shape for o in ops])
    return ([_operand_grad(ctx.xp, i, ops, subs, out, g) for i in range(len(ops))],)
