"""The strict stand-in's user kernels and graph capture (kernelcore/testing/strict_cuda.py) refuse what CuPy and
CUDA refuse, run their twins, and replay a captured graph on the same buffers."""
from __future__ import annotations

import numpy as np
import pytest

from kernelcore.testing import strict_cuda
from kernelcore.testing.strict_xp import xp


@pytest.fixture(autouse=True)
def _no_open_capture():
    with strict_cuda.no_capture():
        yield


def _axpy():
    k = xp.ElementwiseKernel("T x, raw T w, float32 a", "T y", "y = a * x + w[0];", "axpy")
    k.twin = lambda x, w, a: a * x + w[0]
    return k


def test_elementwise_kernel_runs_its_twin_with_broadcasting_and_given_outputs():
    k = _axpy()
    x, w = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3)), xp.asarray(np.float32([1.5]))
    y = k(x, w, np.float32(2))
    np.testing.assert_array_equal(y.get(), 2 * np.arange(6, dtype=np.float32).reshape(2, 3) + 1.5)
    out = xp.empty((2, 3), dtype=np.float32)
    assert k(x, w, np.float32(2), out) is out
    with pytest.raises(ValueError, match="has shape"):
        k(x, w, np.float32(2), xp.empty((3,), dtype=np.float32))


@pytest.mark.parametrize("bad, match", [
    (lambda x, w: (np.zeros((2, 3), np.float32), w, np.float32(2)), "host"),
    (lambda x, w: (x.astype(np.float64), w, np.float32(2)), "bound to"),
    (lambda x, w: (x, w, np.float64(2)), "declared float32"),
    (lambda x, w: (x, np.float32(1), np.float32(2)), "raw argument"),
    (lambda x, w: (x, w), "Wrong number"),
])
def test_elementwise_kernel_refuses_what_cupy_refuses(bad, match):
    x, w = xp.asarray(np.ones((2, 3), np.float32)), xp.asarray(np.float32([1.0]))
    with pytest.raises((TypeError, ValueError), match=match):
        _axpy()(*bad(x, w))


def test_a_kernel_without_a_twin_says_the_stand_in_cannot_compile_it():
    k = xp.ElementwiseKernel("T x", "T y", "y = x;", "copy")
    with pytest.raises(NotImplementedError, match="twin"):
        k(xp.asarray(np.ones(3, np.float32)))


def test_reduction_kernel_checks_and_reduces():
    k = xp.ReductionKernel("T x", "T s", "x", "a + b", "s = a", "0", "total")
    k.twin = lambda x, axis, keepdims: x.sum(axis=axis, keepdims=keepdims)
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(k(xp.asarray(a), axis=(0, 2)).get(), a.sum(axis=(0, 2)))
    with pytest.raises(TypeError, match="host"):
        k(a, axis=0)


RAW = r'''
extern "C" __global__ void scale_rows(const float* x, float* y, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
'''


def _raw():
    k = xp.RawKernel(RAW, "scale_rows")

    def twin(grid, block, x, y, n, a):
        y[:n] = a * x[:n]
    k.twin = twin
    return k


def test_raw_kernel_reads_its_c_signature_and_checks_each_argument():
    k = _raw()
    assert [p[0] for p in k.signature] == ["x", "y", "n", "a"]
    x, y = xp.asarray(np.arange(4, dtype=np.float32)), xp.empty(4, dtype=np.float32)
    k((1,), (32,), (x, y, np.int32(4), np.float32(3)))
    np.testing.assert_array_equal(y.get(), 3 * np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="Python number has no C type"):
        k((1,), (32,), (x, y, 4, np.float32(3)))
    with pytest.raises(TypeError, match="float32 device array"):
        k((1,), (32,), (x.astype(np.float64), y, np.int32(4), np.float32(3)))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        k((1,), (32,), (x, y, np.int32(4)))
    with pytest.raises(strict_cuda.CUDARuntimeError, match="more than 1024 threads"):
        k((1,), (64, 32), (x, y, np.int32(4), np.float32(3)))
    with pytest.raises(ValueError, match="C-contiguous"):
        k((1,), (32,), (xp.asarray(np.ones((4, 2), np.float32))[:, 0], y, np.int32(4), np.float32(3)))


def test_a_twin_writing_through_a_const_pointer_is_caught():
    k = _raw()

    def bad(grid, block, x, y, n, a):
        x[0] = 7
    k.twin = bad
    with pytest.raises(RuntimeError, match="const pointer"):
        k((1,), (32,), (xp.asarray(np.ones(4, np.float32)), xp.empty(4, dtype=np.float32), np.int32(4),
                        np.float32(1)))


def test_capture_records_and_the_graph_replays_on_the_same_buffers():
    a = xp.asarray(np.arange(4, dtype=np.float32))
    state = xp.asarray(np.zeros(4, np.float32))
    stream = xp.cuda.Stream()
    with stream:
        stream.begin_capture()
        b = a * np.float32(2) + 1
        state += b
        graph = stream.end_capture()
    # a capture computes nothing: what it made holds garbage and what it wrote in place is as it was
    assert np.isnan(b._a).all() and (state._a == 0).all()
    graph.launch()
    np.testing.assert_array_equal(state.get(), 2 * np.arange(4) + 1)
    a[...] = xp.asarray(np.ones(4, np.float32))  # a new input, copied into the buffer the graph reads
    graph.launch()
    np.testing.assert_array_equal(b.get(), np.full(4, 3.0))
    np.testing.assert_array_equal(state.get(), 2 * np.arange(4) + 1 + 3)


@pytest.mark.parametrize("inside", [
    lambda a: float(a[0]),
    lambda a: a.get(),
    lambda a: xp.asarray(np.ones(3)),
    lambda a: xp.random.RandomState(0).rand(3),
    lambda a: a[a > 0],
    lambda a: xp.cuda.Stream().synchronize(),
])
def test_capture_refuses_what_cuda_refuses(inside):
    a = xp.asarray(np.arange(3, dtype=np.float32))
    stream = xp.cuda.Stream()
    stream.begin_capture()
    try:
        with pytest.raises(strict_cuda.CUDARuntimeError, match="capturing"):
            inside(a)
    finally:
        stream.end_capture()
    inside(a)  # allowed again outside the capture


def test_the_kernels_record_themselves_in_a_capture():
    k = _axpy()
    x, w = xp.asarray(np.ones(3, np.float32)), xp.asarray(np.float32([0.5]))
    stream = xp.cuda.Stream()
    stream.begin_capture()
    y = k(x, w, np.float32(2))
    graph = stream.end_capture()
    x[...] = xp.asarray(np.full(3, 2, np.float32))
    graph.launch()
    np.testing.assert_array_equal(y.get(), np.full(3, 4.5))


def test_iteration_and_copies_inside_a_capture_are_replayed():
    import copy
    a = xp.asarray(np.arange(3, dtype=np.float32))
    stream = xp.cuda.Stream()
    stream.begin_capture()
    first, dup = next(iter(a)), copy.copy(a)
    graph = stream.end_capture()
    a[...] = xp.asarray(np.full(3, 9, np.float32))
    graph.launch()
    assert float(first) == 9 and (dup.get() == 9).all()


def test_a_graph_names_its_operations_and_tells_views_from_launches():
    a = xp.asarray(np.arange(6, dtype=np.float32))
    stream = xp.cuda.Stream()
    stream.begin_capture()
    b = a.reshape(2, 3)
    c = b * np.float32(2)
    c += 1
    graph = stream.end_capture()
    assert graph.operations == ("view", "mul", "iadd")


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.bool_, np.float32])
def test_arrays_a_capture_made_hold_garbage_of_their_own_type(dtype):
    stream = xp.cuda.Stream()
    stream.begin_capture()
    made = xp.ones(3, dtype=dtype) + xp.ones(3, dtype=dtype)
    graph = stream.end_capture()
    graph.launch()
    np.testing.assert_array_equal(made.get(), np.ones(3, dtype) + np.ones(3, dtype))
