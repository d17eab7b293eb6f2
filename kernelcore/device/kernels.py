"""Every fused device kernel family, imported for its registrations (kernelcore/runtime/fast_paths.py) by the
package init, as kernelcore/native/kernels.py is for the C ones."""
from . import (conv, depthwise, fused_activation, fused_activation_vision, fused_norm, fused_optimizer,  # noqa: F401
               fused_rnn_cell, fused_softmax, pool)
from .declare import DECLARED  # noqa: F401
