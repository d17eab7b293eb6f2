"""Gradients of the tensor-array ops (kernelcore/ops/tensor_array.py), Paddle's grad makers:

  write_to_array          X@GRAD = read_from_array(Out@GRAD, I, X_W = X): zeros where the loss never read
                          entry I
  read_from_array         X@GRAD (an array) = write_to_array(Out@GRAD, I)
  tensor_array_to_tensor  X@GRAD[k] = the slice of Out@GRAD entry k filled (tensor_array_to_tensor_grad)
  lod_array_length        none: a count
"""
from __future__ import annotations

from ..ir.registry import In, Out, get_op_def, register_op
from ..ops._infer import normalize_axis
from ..ops.tensor_array import array_entries
from ..transforms.backward import GradContext, grad_rule, no_grad, rule


@rule("write_to_array")
def write_to_array_grad_rule(g: GradContext):
    xg = g.input_grad("X")
    if not xg:
        return []
    return [g.grad_op("read_from_array", {"X": g.output_grad("Out"), "I": g.input("I"), "X_W": g.input("X")},
                      {"Out": xg})]


@rule("read_from_array")
def read_from_array_grad_rule(g: GradContext):
    xg = g.input_grad("X")
    if not xg:
        return []
    return [g.grad_op("write_to_array", {"X": g.output_grad("Out"), "I": g.input("I")}, {"Out": xg})]


TENSOR_ARRAY_TO_TENSOR_GRAD = register_op(
    "tensor_array_to_tensor_grad",
    "X@GRAD (a tensor array) = Out@GRAD cut back into the entries of X: entry k gets the slice it filled along "
    "`axis` (stacked: the k-th index of the new axis).",
    inputs=[In("X", "the forward tensor array"), In("Out@GRAD", "the gradient of the joined tensor")],
    outputs=[Out("X@GRAD", "a tensor array of X's entries' shapes")],
    attrs=list(get_op_def("tensor_array_to_tensor").attrs.values()))


@TENSOR_ARRAY_TO_TENSOR_GRAD.kernel()
def tensor_array_to_tensor_grad(ctx, ins, attrs):
    arr, g = ins
    xp = ctx.xp
    entries = array_entries(arr)
    if attrs["use_stack"]:
        axis = normalize_axis(attrs["axis"], g.ndim)
        return ([xp.take(g, k, axis=axis) for k in range(len(entries))],)
    axis = normalize_axis(attrs["axis"], g.ndim)
    pieces, start = [], 0
    for e in entries:
        size = e.shape[axis]
        index = [slice(None)] * g.ndim
        index[axis] = slice(start, start + size)
        pieces.append(g[tuple(index)])
        start += size
    return (pieces,)


@rule("tensor_array_to_tensor")
def tensor_array_to_tensor_grad_rule(g: GradContext):
    xg = g.input_grad("X")
    if not xg:
        return []
    return [g.grad_op("tensor_array_to_tensor_grad", {"X": g.input("X"), "Out@GRAD": g.output_grad("Out")},
                      {"X@GRAD": xg}, copy_attrs=True)]


no_grad("lod_array_length", "gather_tree")
# integer ops ops/index_arith.py defines where no math family did: no gradient, unless that family gave one
no_grad(*(t for t in ("elementwise_floordiv", "size") if grad_rule(t) is None))
