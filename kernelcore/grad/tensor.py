"""Gradients of the tensor ops (kernelcore/ops/tensor.py): copies and casts, which take forward ops as their
gradient as in Paddle (cast, assign); constants, random draws, feeding and counters have none.
"""
from __future__ import annotations

from ..transforms.backward import GradContext, no_grad, rule


@rule("cast")
def cast_grad_rule(g: GradContext):
    """Paddle's CastGradMaker: X@GRAD = cast(Out@GRAD) back from out_dtype to in_dtype."""
    return [g.grad_op("cast", {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")},
                      {"in_dtype": g.attr("out_dtype"), "out_dtype": g.attr("in_dtype")})]


@rule("assign")
def assign_grad_rule(g: GradContext):
    """Paddle's AssignGradMaker: X@GRAD = assign(Out@GRAD)."""
    if not g.has_input("X"):
        return []
    return [g.grad_op("assign", {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")})]


# Constants, random draws, feeding and fetching, counters: no gradient (Paddle: empty grad makers).
no_grad("fill_constant", "uniform_random", "gaussian_random", "feed", "fetch", "increment",
        "fill_zeros_like", "fill_any_like", "fill_constant_batch_size_like", "logical_not")
