"""The index arithmetic of the GPU's convolution and pooling kernels is written once (kernelcore/device/
cuda_source.py NCHW_INDEX, pool.py WINDOWS), and that CUDA text computes what the NumPy twins compute: the helpers
are compiled for the host with the C++ compiler (the CUDA words defined away) and checked against a brute force
over small geometries; where nvcc is installed, every kernel using them compiles to PTX. The kernels themselves run
only on a GPU (bench/gpu_check.sh); here their twins run."""
from __future__ import annotations

import itertools
import re
import shutil
import subprocess

import numpy as np
import pytest

from kernelcore.device import conv, depthwise, pool
from kernelcore.device.cuda_source import NCHW_INDEX

IMAGE_KERNELS = [conv.COL2IM, conv.TAP_SUM, depthwise.FORWARD, depthwise.INPUT_GRAD, depthwise.FILTER_GRAD,
                 pool.POOL, pool.MAX_GRAD, pool.AVG_GRAD]

# a flat index taken apart by hand (`idx % ow`, `t / oh`), or a tap's input or output worked out in place
_BY_HAND = re.compile(r"\b(?:idx|t)\s*[%/]\s*\w+|\w+\s*\*\s*s[hw]\s*-\s*p[tl]\b|\w+\s*\+\s*p[tl]\s*-\s*k[yx]\s*\*")


def test_the_image_kernels_take_their_index_arithmetic_from_the_shared_text():
    for decl in IMAGE_KERNELS:
        assert NCHW_INDEX in decl.preamble, decl.name
        body = decl.body[decl.body.index("{"):]
        assert not _BY_HAND.findall(body), (decl.name, _BY_HAND.findall(body))


HARNESS = r"""
#include <algorithm>
#include <cstdio>
using std::max;
using std::min;
#define __device__
#define __forceinline__ inline
%s
int main() {
    for (int rows = 1; rows <= 3; ++rows)
        for (int cols = 1; cols <= 4; ++cols)
            for (int idx = 0; idx < 2 * rows * cols; ++idx) {
                kc_pixel p = kc_pixel_of(idx, rows, cols);
                printf("pixel %%d %%d %%d %%d %%d %%d\n", idx, rows, cols, p.x, p.y, p.plane);
            }
    for (int s = 1; s <= 3; ++s) for (int pad = 0; pad <= 2; ++pad) for (int d = 1; d <= 2; ++d)
        for (int k = 0; k <= 2; ++k) for (int n = 1; n <= 5; ++n) for (int i = -1; i <= 6; ++i)
            printf("tap %%d %%d %%d %%d %%d %%d %%d %%d\n", s, pad, d, k, n, i, kc_tap_input(i, k, s, pad, d, n),
                   kc_tap_output(i, k, s, pad, d, n));
    for (int kernel = 1; kernel <= 3; ++kernel) for (int s = 1; s <= 3; ++s) for (int pad = 0; pad < kernel; ++pad)
        for (int size = kernel - 2 * pad; size <= 5; ++size) {
            if (size < 1) continue;
            int outs = (size + 2 * pad - kernel) / s + 1;
            for (int o = 0; o < outs; ++o) {
                kc_span w = kc_pool_window(o, kernel, s, pad, size);
                printf("window %%d %%d %%d %%d %%d %%d %%d %%g %%g\n", kernel, s, pad, size, o, w.lo, w.hi,
                       kc_pool_divisor(w, w, kernel, kernel, 1), kc_pool_divisor(w, w, kernel, kernel, 0));
            }
            for (int i = 0; i < size; ++i) {
                kc_span held = kc_pool_outputs(i, kernel, s, pad, outs);
                printf("held %%d %%d %%d %%d %%d %%d %%d\n", kernel, s, pad, size, i, held.lo, held.hi);
            }
        }
}
""" % pool.WINDOWS


def _host_run(tmp_path) -> list[list[int | float]]:
    source = tmp_path / "index.cpp"
    source.write_text(HARNESS)
    binary = tmp_path / "index"
    subprocess.run(["g++", "-std=c++14", "-Wall", "-Werror", str(source), "-o", str(binary)], check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run([str(binary)], check=True, capture_output=True, text=True, timeout=60).stdout
    return [line.split() for line in out.splitlines()]


def _brute_tap(s, pad, d, k, n, i):
    """Output o's tap k reads input o * s - pad + k * d: the input for output i, the output for input i."""
    read = i * s - pad + k * d
    reached = [o for o in range(n) if o * s - pad + k * d == i]
    return (read if 0 <= read < n else -1), (reached[0] if reached else -1)


def _brute_window(kernel, s, pad, size, o):
    start = o * s - pad
    lo, hi = max(start, 0), min(start + kernel, size)
    return lo, hi, float(max(max(hi - lo, 0) ** 2, 1)), float(kernel * kernel)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_the_shared_index_text_computes_what_the_twins_compute(tmp_path):
    rows = _host_run(tmp_path)
    seen = {kind: 0 for kind in ("pixel", "tap", "window", "held")}
    for kind, *values in rows:
        seen[kind] += 1
        if kind == "pixel":
            idx, r, c, x, y, plane = map(int, values)
            assert (plane, y, x) == tuple(np.unravel_index(idx, (idx // (r * c) + 1, r, c))), values
        elif kind == "tap":
            *geometry, read, reached = map(int, values)
            assert (read, reached) == _brute_tap(*geometry), values
        elif kind == "window":
            kernel, s, pad, size, o, lo, hi = map(int, values[:7])
            assert (lo, hi, float(values[7]), float(values[8])) == _brute_window(kernel, s, pad, size, o), values
        else:
            kernel, s, pad, size, i, lo, hi = map(int, values)
            outs = (size + 2 * pad - kernel) // s + 1
            holding = [o for o in range(outs) if o * s - pad <= i < o * s - pad + kernel]
            assert list(range(lo, hi)) == holding, values
    assert all(seen.values()), seen


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit, no GPU)")
@pytest.mark.parametrize("decl", IMAGE_KERNELS, ids=[d.name for d in IMAGE_KERNELS])
def test_each_image_kernel_compiles_for_the_gpu(decl, tmp_path):
    source = tmp_path / f"{decl.name}.cu"
    source.write_text(decl.preamble + decl.body)
    done = subprocess.run(["nvcc", "-ptx", "-arch=sm_80", str(source), "-o", str(tmp_path / "k.ptx")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f".entry {decl.name}(" in (tmp_path / "k.ptx").read_text()


def test_the_brute_forces_agree_with_the_twins_own_arithmetic():
    """The twins' _valid_outputs (conv) and _bounds (pool) against the brute forces above, so that the host check
    ties the CUDA text to the twins, not merely to itself."""
    for s, pad, d, k, n in itertools.product(range(1, 4), range(3), range(1, 3), range(3), range(1, 6)):
        first, end = conv._valid_outputs(n, s, k * d - pad, n)
        assert [o for o in range(n) if _brute_tap(s, pad, d, k, n, o)[0] >= 0] == list(range(first, end))
    for kernel, s, size in itertools.product(range(1, 4), range(1, 4), range(1, 6)):
        for pad in range(max(0, (kernel - size + 1) // 2), kernel):  # the padded input holds a window
            outs = (size + 2 * pad - kernel) // s + 1
            lo, hi = pool._bounds(np.arange(outs), kernel, s, pad, size)
            assert [(int(a), int(b)) for a, b in zip(lo, hi)] == [
                _brute_window(kernel, s, pad, size, o)[:2] for o in range(outs)]
