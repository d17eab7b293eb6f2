"""Tier 2: every op case's kernel on a GPU (CuPy) against the same NumPy references.
Skipped cleanly where no GPU and CuPy are available."""
import pytest

import kernelcore as kc
from opcases import all_cases, compare, run

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not kc.gpu_available(), reason="needs CuPy and an NVIDIA GPU")]
CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_kernel_matches_numpy_reference(case):
    got = run(case, kc.GPUPlace(0))
    if case.rtol < 1e-5:
        case.rtol = 1e-5  # float32 on the GPU: reductions sum in a different order
    compare(case, got)
