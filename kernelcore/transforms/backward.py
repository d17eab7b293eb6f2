"""append_backward and gradients: gradient ops appended to a program, as Paddle's backward writes them.

Gradient operations exist only in training programs; they are appended here, when asked, never built
along with the forward ops. The result is the program Paddle's `append_backward` writes
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
BlockDesc::FindVarRecursive does (grad_walk.py `_find`: a block's forward block, then its parent), so a grad block
sees the step block's variables; a grad block declares its own gradient variables. If a failure stops
append_backward after such blocks were made, they are removed again.
"""
from __future__ import annotations

from ..errors import ProgramError
from ..ir import op_roles
from ..ir.program import Block, Operator, Variable
from .grad_rules import (EMPTY_VAR, GRAD_RULES, GRAD_SUFFIX, NO_GRAD, GradContext, GradOp,  # noqa: F401
                         NoGradientError, grad_name, grad_rule, is_float, no_grad, rule, standard, strip_grad_suffix,
                         wanted)  # - the rule modules in kernelcore/grad/ register through this module
from .grad_walk import append_block_backward, append_grad_ops  # noqa: F401  - control-flow rules run the walk


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
    grad_map = append_grad_ops(block, [loss], [_loss_seed(loss)], sources=None, no_grad=no_grad)
    if loss_op is not None:
        loss_op.set_attr("op_role", op_roles.FORWARD | op_roles.LOSS)

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
    grad_map = append_grad_ops(block, targets, seeds, sources=set(names) - no_grad, no_grad=no_grad)
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
                       "op_role": op_roles.BACKWARD | op_roles.LOSS})
    return GradOp("fill_any_like", {"X": [loss.name]}, {"Out": [grad_name(loss.name)]},
                  {"value": 1.0, "dtype": -1, "op_role": op_roles.BACKWARD | op_roles.LOSS})


__all__ = ["EMPTY_VAR", "GRAD_RULES", "GRAD_SUFFIX", "GradContext", "GradOp", "NO_GRAD", "NoGradientError",
           "append_backward", "append_block_backward", "grad_name", "grad_rule", "gradients", "is_float", "no_grad",
           "rule", "standard", "strip_grad_suffix", "wanted"]
