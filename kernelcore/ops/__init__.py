"""Op definitions, one module per family. Importing this package registers them all."""
from . import activation, math, tensor, shape  # noqa: F401
from . import nn, loss  # noqa: F401
from . import control_flow  # noqa: F401
from . import optimizer, dropout  # noqa: F401  - training: optimizer updates, dropout
from . import pointwise, elementwise_binary, reductions, host_values, dims, select, indexing  # noqa: F401  - Transformer/BERT programs
from . import rnn  # noqa: F401  - the fused rnn op (paddle.nn.LSTM/GRU/SimpleRNN)
from . import conv, pool, norm, interp, pad  # noqa: F401  - convolution, pooling, normalisation (batch, group, instance, layer), resizing
from . import tensor_array, beam_search, index_arith, grad_clip, detection, box_ops, roi_align, window_ops  # noqa: F401  - decoding, clipping, detection, Swin windows
from . import unary_math, padding, reorder, norms_p  # noqa: F401  - elementwise math, pad, flip and shuffles, p-norms
from . import lp_pool, along_axis, blend, creation, loss_pointwise  # noqa: F401  - lp pooling, picks, lerp, new tensors, losses
from . import linalg_basic, search, scan, binary_math, reduce_extrema, nll_loss  # noqa: F401
from . import patches, unpool, bilinear  # noqa: F401  - unfold/fold, max unpooling, bilinear products
from . import indexed_update, arrange  # noqa: F401  - writes at positions; cutting, joining and repeating
from . import linalg_solve  # noqa: F401  - determinants, solves, Cholesky, matrix powers, multi_dot
from . import reduce_misc, labels, bits_counts, temporal_shift  # noqa: F401  - reductions, label helpers, integer ops
from . import random_draws, checks, statistics, affine_grid, row_conv  # noqa: F401  - draws, assert, histogram, ...
from . import decompositions  # noqa: F401  - svd, qr, eigh, eigvalsh
from . import special_fns  # noqa: F401  - lgamma, digamma, polygamma, erf, erfinv, the modified Bessel functions
from . import complex_parts, fft  # noqa: F401  - complex numbers from and into real parts; Fourier transforms
from . import distinct  # noqa: F401  - unique, unique_consecutive, mode
from . import einsum  # noqa: F401  - einsum
from . import grid_sample  # noqa: F401  - grid_sampler
from . import spectral_norm  # noqa: F401  - spectral_norm
