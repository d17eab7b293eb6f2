"""Gradient rules and gradient ops: each operator has a gradient operator.

A rule is Paddle's GradOpMaker: given a view of one forward op (`GradContext`), it returns the descs of
the ops that compute that op's input gradients from its output gradients. Rules live in one table,
`kernelcore.transforms.backward.GRAD_RULES` (op type -> rule), which the machinery module owns; this package holds
one small rule module per op family (math, activation, loss, tensor, nn, control_flow), each registering
into that table with `standard`, `rule` and `no_grad`. Importing kernelcore imports them; the machinery
never imports a rule module.

Three kinds of entry:
  * a rule (callable): the op is differentiable;
  * NO_GRAD: the op has no gradient (indices, comparisons, constants, random draws, feed/fetch,
    counters, optimizer updates). Paddle registers these with an empty GradOpMaker; backward treats
    them as cutting the path, silently;
  * no entry (grad_rule(type) is None): nobody has written the rule yet. append_backward raises when such
    an op lies on the path from the loss to a variable that needs a gradient.

Most rules are `standard` ones: one `<type>_grad` op whose input slots are chosen forward inputs,
forward outputs and `<Out>@GRAD` slots, and whose outputs are `<In>@GRAD` slots, with every forward
attribute copied (Paddle's DefaultGradOpMaker with the slots Paddle's own maker picks). `standard`
registers that grad op in the registry as well, so the rule and the op's OpProto cannot disagree.
A few ops take forward ops as their gradient, as in Paddle: sum -> scale, scale -> scale,
cast -> cast, assign -> assign, split -> concat, select_input -> select_output,
split_lod_tensor <-> merge_lod_tensor. The rules of recurrent, while and conditional_block also
build a grad sub-block by running the backward machinery over their sub-block (control_flow.py).
"""
from . import activation, control_flow, loss, math, nn, shape, tensor  # noqa: F401  - each registers its rules
from . import pointwise, elementwise_binary, reductions, host_values, dims, select, indexing  # noqa: F401  - Transformer/BERT ops
from . import rnn  # noqa: F401  - rnn_grad (Paddle's fused rnn op)
from . import conv, pool, norm, interp, pad  # noqa: F401  - convolution, pooling, normalisation, resizing, padding
from . import detection, grad_clip, index_arith, roi_align, tensor_array, window_ops  # noqa: F401  - decoding, clipping, detection, Swin windows
from . import unary_math, padding, reorder, norms_p  # noqa: F401  - their gradients
from . import lp_pool, along_axis, blend, creation, loss_pointwise  # noqa: F401  - their gradients
from . import linalg_basic, search, scan, binary_math, reduce_extrema, nll_loss  # noqa: F401  - their gradients
from . import patches, unpool, bilinear  # noqa: F401  - their gradients
from . import indexed_update, arrange  # noqa: F401  - their gradients
from . import linalg_solve  # noqa: F401  - their gradients
from . import reduce_misc, labels, temporal_shift  # noqa: F401  - their gradients (labels also marks the integer ops)
from . import random_draws, affine_grid, row_conv  # noqa: F401  - (random_draws marks the ops without one)
from . import decompositions  # noqa: F401  - their gradients
from . import special_fns  # noqa: F401  - their gradients
from . import complex_parts, fft  # noqa: F401  - their gradients
from . import distinct  # noqa: F401  - mode's gradient
from . import einsum  # noqa: F401  - its gradient
from . import grid_sample  # noqa: F401  - its gradient
from . import spectral_norm  # noqa: F401  - its gradient
