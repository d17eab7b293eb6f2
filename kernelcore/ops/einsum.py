"""einsum (paddle.einsum): Out = the Einstein sum `equation` names over Operands. The equation is made explicit
once (ellipses spelled out as letters, an implicit output written) so the gradient can reuse it."""
from __future__ import annotations

import string

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op

EINSUM = register_op(
    "einsum", "Out = the Einstein summation `equation` over Operands (numpy's rules, ellipses included).",
    inputs=[In("Operands", "the tensors", duplicable=True)],
    outputs=[Out("Out", "the result"),
             Out("InnerCache", "(not written)", duplicable=True, dispensable=True, intermediate=True),
             Out("XShape", "(not written)", duplicable=True, dispensable=True, intermediate=True)],
    attrs=[Attr("equation", A.STRING, "e.g. 'ij,jk->ik'")])


def explicit(equation: str, shapes) -> tuple[list[str], str]:
    """(one subscript string per operand, the output's), ellipses replaced by upper-case letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        raise ValueError(f"einsum: {equation!r} names {len(subs)} operands, {len(shapes)} given")
    spare = [c for c in string.ascii_uppercase if c not in eq]
    widest = 0
    for i, (s, shape) in enumerate(zip(subs, shapes)):
        if "..." in s:
            k = len(shape) - (len(s) - 3)
            widest = max(widest, k)
            subs[i] = s.replace("...", "".join(spare[widest - k + j] for j in range(k)) if k else "")
        elif len(s) != len(shape):
            raise ValueError(f"einsum: subscripts {s!r} do not fit a {len(shape)}-d operand")
    ell = "".join(spare[:widest])
    if arrow:
        out = rhs.replace("...", ell)
    else:
        letters = "".join(subs)
        out = ell + "".join(sorted(c for c in set(letters) if c.islower() and letters.count(c) == 1))
    return subs, out


@EINSUM.kernel()
def einsum(ctx, ins, attrs):
    (ops,) = ins
    subs, out = explicit(attrs["equation"], [o.shape for o in ops])
    return ctx.xp.einsum(",".join(subs) + "->" + out, *ops), None, None
