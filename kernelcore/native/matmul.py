"""The matrix products' variants in parts (kernelcore/runtime/fast_paths.py) over their reference kernels
(kernelcore/ops/math.py mul and matmul_v2, kernelcore/grad/math.py their gradients): each product split by rows or
columns over the cores inside a split run (cpu_parts.matmul), so that a CNN's classifier and its gradients use the
cores the BLAS is held off; elsewhere it is xp.matmul, as in the reference."""
from __future__ import annotations

import numpy as np

from ..grad import math as GM
from ..ops import math as M
from ..runtime.cpu_parts import matmul
from ..runtime.fast_paths import fast_kernel


def _on_the_host(xp, ins, attrs) -> bool:
    return xp is np


for _dtype in ("float32", "float64"):
    fast_kernel("mul", _on_the_host, dtype=_dtype)(M.mul_kernel(matmul))
    fast_kernel("matmul_v2", _on_the_host, dtype=_dtype)(M.matmul_v2_kernel(matmul))
    fast_kernel("mul_grad", _on_the_host, dtype=_dtype)(GM.mul_grad_kernel(matmul))
    fast_kernel("matmul_v2_grad", _on_the_host, dtype=_dtype)(GM.matmul_v2_grad_kernel(matmul))
