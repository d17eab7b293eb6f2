"""Every fast variant kernelcore/native registers (kernelcore/runtime/fast_paths.py), one module per op family;
importing this registers them all."""
from . import activation, conv, elementwise, matmul, norm, optimizer, pool, rnn  # noqa: F401
