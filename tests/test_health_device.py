"""The flight recorder's device summary (kernelcore/observe/health_device.py) on the strict CuPy stand-in: its two
kernels' launches and arguments as CuPy checks them, their twins' numbers against the NumPy reference of the same
values on the host, and which values go to the reference instead. (The CUDA bodies run only on a GPU.)"""
import math
import re

import numpy as np
import pytest

from kernelcore.observe import health_device as hd, health_summary as hs
from kernelcore.runtime import fast_paths
from kernelcore.testing.strict_xp import xp as strict


def _device_numbers(a):
    rows = hs.NumberRows(3)
    bad = hs.write_on_device_or_reference(strict.asarray(a), rows, 2)
    return hs.summary_at(a.size, rows.array[2]), bad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 255, 257, hd.THREADS * hd.MAX_BLOCKS + 3])  # the last: a grid-stride loop
def test_the_device_summary_matches_the_reference(dtype, n, monkeypatch):
    launched = []
    for k in (*hd.PARTIALS.values(), hd.MERGE):
        kernel = k.on(strict)
        monkeypatch.setattr(kernel, "twin", lambda *a, _t=kernel.twin, _n=k.name: (launched.append(_n), _t(*a))[1])
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(dtype)
    a[rng.integers(0, max(n, 1), min(n, 7))] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.0, -3.0][:min(n, 7)]
    s, bad = _device_numbers(a)
    r = hs.summarize(a)
    assert launched == [hd.PARTIALS[np.dtype(dtype)].name, hd.MERGE.name]
    assert s[:7] == r[:7] and bad == r.nonfinite
    for got, want in ((s.min, r.min), (s.max, r.max), (s.mean, r.mean)):
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-5, abs=1e-7)
    assert s.l2 == pytest.approx(r.l2, rel=1e-5)


def test_what_the_kernels_do_not_take_goes_to_the_reference():
    a = (np.arange(24, dtype=np.float32) - 7).reshape(4, 6)
    for host, device in ((a.T, strict.asarray(a).T), (a.astype(np.int64), strict.asarray(a.astype(np.int64))),
                         (a.astype(np.float16), strict.asarray(a.astype(np.float16)))):
        assert not hd.takes(device)
        rows = hs.NumberRows(1)
        hs.write_on_device_or_reference(device, rows, 0)
        assert hs.summary_at(host.size, rows.array[0])[:9] == hs.summarize(host)[:9]


def test_a_launch_the_kernels_were_not_written_for_is_refused():
    x, part = strict.asarray(np.ones(10, np.float32)), strict.empty(20, dtype=np.float64)
    with pytest.raises(ValueError, match="grid"):
        hd.PARTIALS[np.dtype(np.float32)].on(strict)((2,), (128,), (x, np.int64(10), part))
    with pytest.raises(TypeError):  # a Python int has no C type: CuPy would guess one
        hd.PARTIALS[np.dtype(np.float32)].on(strict)((2,), (hd.THREADS,), (x, 10, part))


def test_with_fast_paths_off_the_recorder_writes_with_the_reference_alone():
    with fast_paths.switched_off():
        assert hs.summary_writer() is hs.write_reference


@pytest.mark.parametrize("kernel", [*hd.PARTIALS.values(), hd.MERGE], ids=lambda k: k.name)
def test_each_cuda_source_declares_its_kernel_and_balances_its_brackets(kernel):
    code = re.sub(r"/\*.*?\*/", "", kernel.body, flags=re.S)
    assert re.search(rf'extern "C" __global__ void {kernel.name}\(', code)
    assert not re.search(r"\b(ELEM_T|KERNEL_NAME|NAN_|INF)\b", code)  # every placeholder filled
    for open_, close in ("()", "{}", "[]"):
        assert code.count(open_) == code.count(close)
