"""kernelcore/native: the C kernels against the NumPy kernels they stand in for (the same op functions with the
library switched off), the thread count each call gets, and the library's presence where it can be built.

The NumPy kernels stay the reference: the GPU runs them, and the finite-difference and Paddle parity tests check
them; here every C path is compared with its NumPy path on the same inputs, on shapes that reach its edges."""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import kernelcore as kc
from kernelcore.runtime import cpu_parts
from kernelcore import native
from kernelcore.native import conv as NC
from kernelcore.native import rnn as NR
from kernelcore.ops import conv as C
from kernelcore.runtime import fast_paths

rng = np.random.default_rng(11)
HAVE = native.library() is not None
needs_library = pytest.mark.skipif(not HAVE, reason=f"the C kernels are not loaded: {native.native_state()}")


def prepared(op_type):
    """The kernel the executor prepares for a float32 `op_type` on the CPU: its C variant (kernelcore/native),
    which runs the reference kernel where the variant's gate says no (`_numpy_path` below makes it say no)."""
    reference = kc.get_op_def(op_type).find_kernel("cpu", "float32")
    kernel = fast_paths.choose(op_type, "cpu", "float32", reference)
    assert kernel is not reference, f"{op_type} has no fast variant"
    return kernel


def test_the_library_is_built_wherever_a_c_compiler_is():
    """`./dev build` and `pip install` compile the library (hatch_build.py); a machine with a C compiler that
    ends up without it has a broken build, which would silently test only the NumPy paths."""
    if os.environ.get(native.ENV, "").lower() == "off" or not sys.platform.startswith("linux") \
            or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no library expected here")
    assert HAVE, native.native_state()


class _Ctx:
    xp = np
    training = True

    @staticmethod
    def output_names(slot):
        return [slot]


def _numpy_path(monkeypatch):
    monkeypatch.setattr(native, "ready", lambda *a: False)


BN_SHAPES = [(8, 3, 5, 6), (1, 1, 7), (2, 5, 1, 1), (3, 4, 2, 3, 2), (4, 16, 33, 17), (5, 2, 1)]


def _bn_inputs(shape, offset=0.0, spread=1.0):
    c = shape[1]
    x = (offset + spread * rng.standard_normal(shape)).astype(np.float32)
    return (x, rng.uniform(0.5, 1.5, c).astype(np.float32), rng.standard_normal(c).astype(np.float32),
            rng.standard_normal(c).astype(np.float32), rng.uniform(0.5, 2.0, c).astype(np.float32))


def _bn_attrs(training):
    return dict(data_layout="NCHW", is_test=not training, use_global_stats=False, trainable_statistics=False,
                epsilon=1e-5, momentum=0.9)


def _close(got, want, rtol=2e-5):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    if want.size == 0:
        return
    scale = max(1.0, float(np.abs(want).max()))
    assert float(np.abs(got - want).max()) <= rtol * scale, float(np.abs(got - want).max())


@needs_library
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_in_c_equals_the_numpy_kernel(shape, training, monkeypatch):
    x, scale, bias, mean, var = _bn_inputs(shape)
    ins = (x, scale, bias, mean, var, None)
    _Ctx.training = training
    got = prepared("batch_norm")(_Ctx, ins, _bn_attrs(training))
    _numpy_path(monkeypatch)
    want = prepared("batch_norm")(_Ctx, ins, _bn_attrs(training))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        _close(g, w)
    _Ctx.training = True


@needs_library
def test_batch_norms_variance_does_not_cancel_far_from_zero():
    """A channel at 1000 +- 0.01: E[x^2] - E[x]^2 in float32 would lose every digit of the variance; the C kernel
    sums squared deviations from the mean, as the NumPy one does."""
    x, scale, bias, mean, var = _bn_inputs((8, 4, 16, 16), offset=1000.0, spread=0.01)
    y, _, _, saved_mean, saved_inv, _ = prepared("batch_norm")(_Ctx, (x, scale, bias, mean, var, None),
                                                               _bn_attrs(True))
    xd = x.astype(np.float64)
    want_var = xd.var(axis=(0, 2, 3))
    np.testing.assert_allclose(saved_mean, xd.mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(1 / saved_inv.astype(np.float64) ** 2 - 1e-5, want_var, rtol=1e-3)
    want_y = (xd - xd.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(want_var.reshape(1, -1, 1, 1) + 1e-5) \
        * scale.reshape(1, -1, 1, 1) + bias.reshape(1, -1, 1, 1)
    # the float32 mean itself is 1000 +- 3e-5 (half an ulp), 0.3% of a standard deviation: y is that close
    np.testing.assert_allclose(y, want_y, atol=1e-2)


@needs_library
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("global_stats", [False, True])
@pytest.mark.parametrize("want_dx", [True, False])
def test_batch_norm_grad_in_c_equals_the_numpy_kernel(shape, global_stats, want_dx, monkeypatch):
    x, scale, bias, mean, var = _bn_inputs(shape)
    g = rng.standard_normal(shape).astype(np.float32)
    inv = (1 / np.sqrt(x.var(axis=tuple(i for i in range(x.ndim) if i != 1)) + 1e-5)).astype(np.float32)
    bmean = x.mean(axis=tuple(i for i in range(x.ndim) if i != 1)).astype(np.float32)
    attrs = dict(_bn_attrs(True), use_global_stats=global_stats)

    class Ctx(_Ctx):
        @staticmethod
        def output_names(slot):
            return [slot] if (want_dx or slot != "X@GRAD") else []
    ins = (x, scale, bias, bmean, inv, mean, var, None, g)
    got = prepared("batch_norm_grad")(Ctx, ins, attrs)
    _numpy_path(monkeypatch)
    want = prepared("batch_norm_grad")(Ctx, ins, attrs)
    assert (got[0] is None) == (not want_dx) == (want[0] is None)
    for a, b in zip(got, want):
        if b is not None:
            _close(a, b, rtol=5e-5)


@needs_library
def test_the_thread_count_changes_no_bit():
    """Each channel is one thread's whole: the parallel loop shares out channels, never a channel's sums."""
    x, scale, bias, _, _ = _bn_inputs((4, 33, 9, 9))
    g = rng.standard_normal(x.shape).astype(np.float32)
    runs = []
    for n in (1, 2, 3):
        original = native.threads
        native.threads = lambda n=n: n
        try:
            y, m, v, inv = native.batch_norm_train(x, scale, bias, 1e-5)
            runs.append((y, m, v, inv, *native.batch_norm_grad(x, g, m, inv, scale, True, True)))
        finally:
            native.threads = original
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


def test_the_calls_thread_count_follows_the_blas_limit_and_the_parts():
    if cpu_parts.split_run_parts() is None:
        pytest.skip("no BLAS threadpoolctl can hold")
    with threadpool_limits(1):
        assert native.threads() == 1
    with threadpool_limits(2):
        assert native.threads() == 2
        with cpu_parts.split_run(np, True):
            assert native.threads() == 2                     # the run's limit, while the BLAS is held at one
            seen = cpu_parts.run_parts([native.threads, native.threads])
            assert seen == [1, 1]                            # inside an op's parts: one each


@needs_library
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_starts_its_own_threads():
    """The parent's worker threads do not exist in a forked child: the library starts fresh ones there, where a
    loop handed to the parent's would wait for ever."""
    x, scale, bias, _, _ = _bn_inputs((4, 8, 6, 6))
    with threadpool_limits(2):
        want = native.batch_norm_train(x, scale, bias, 1e-5)[0]   # the parent's workers exist now
        pid = os.fork()
        if pid == 0:
            try:
                got = native.batch_norm_train(x, scale, bias, 1e-5)[0]
                os._exit(0 if np.array_equal(got, want) else 1)
            finally:
                os._exit(2)
    for _ in range(200):                                            # 10 s
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's loop never finished")
    assert os.waitstatus_to_exitcode(status) == 0


def test_off_in_the_environment_runs_the_numpy_kernels():
    code = ("import json, numpy as np, kernelcore as kc; from kernelcore import native\n"
            "print(json.dumps([native.native_state(), native.ready(np, np.zeros(3, np.float32))]))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, native.ENV: "off"}, capture_output=True,
                         text=True, check=True).stdout
    state, ready = json.loads(out)
    assert state.startswith("off") and ready is False


def test_off_turns_every_c_path_off():
    """KERNELCORE_NATIVE=off: no gate says yes (the RNNs' packed GEMM and LSTM steps included), an LSTM step
    runs, and the library is never even mapped into the process."""
    code = """
import json, numpy as np
from kernelcore import native
from kernelcore.native import rnn as NR
from kernelcore.ops import rnn as R
f = np.ones((2, 8, 6, 6), np.float32)
w = NR.FAST.recurrent_weight(np, np.ones((16, 4), np.float32), 4)
gates, h, c = R.cell_forward(np, "LSTM", np.ones((3, 16), np.float32), np.ones((3, 4), np.float32),
                             np.ones((3, 4), np.float32), w, None, steps=NR.FAST)
print(json.dumps({"enabled": native.enabled(np), "ready": native.ready(np, f),
                  "gemm": native.gemm_ready(np, np.ones((2, 2), np.float32)),
                  "conv": native.conv2d_ready(np, f, np.ones((4, 8, 3, 3), np.float32), 1),
                  "depthwise": native.depthwise_ready(np, f, np.ones((8, 1, 3, 3), np.float32), 8),
                  "add": native.add_plan(np, np.ones((64, 1024), np.float32), np.ones(1024, np.float32)) is not None,
                  "packed": isinstance(w, native.PackedColumns), "steps_in_c": NR.STEPS_IN_C,
                  "mapped": "libkernelcore_cpu" in open("/proc/self/maps").read(), "h": h.tolist()}))
"""
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, native.ENV: "off"}, capture_output=True,
                         text=True, check=True).stdout
    seen = json.loads(out)
    assert np.isfinite(seen.pop("h")).all()
    assert seen == dict.fromkeys(seen, False)


@needs_library
def test_the_one_in_process_switch_turns_the_packed_gemm_off_too(monkeypatch):
    """`enabled` gates every C path: with it off the RNNs' weight is not packed and their products are NumPy's
    (before, the GEMM's gate asked for the library alone, so switching `ready` off left it on)."""
    w_hh = np.ones((16, 4), np.float32)
    assert isinstance(NR.FAST.recurrent_weight(np, w_hh, 4), native.PackedColumns)
    monkeypatch.setattr(native, "enabled", lambda xp: False)
    assert not native.gemm_ready(np, w_hh) and not native.ready(np, w_hh)
    assert not isinstance(NR.FAST.recurrent_weight(np, w_hh, 4), native.PackedColumns)


@needs_library
def test_ready_takes_only_contiguous_float32_host_arrays():
    a = np.zeros((4, 3, 2), np.float32)
    assert native.ready(np, a)
    assert not native.ready(np, a.astype(np.float64))
    assert not native.ready(np, a.transpose(1, 0, 2))
    assert not native.ready(object(), a)


DEPTHWISE_CASES = [
    # (x shape, kernel, strides, pads ((top, bottom), (left, right)), dilations)
    ((2, 3, 7, 5), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((2, 4, 16, 16), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)),
    ((1, 5, 9, 11), (5, 5), (1, 2), ((2, 2), (2, 2)), (1, 1)),
    ((3, 2, 8, 8), (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2)),
    ((2, 3, 6, 7), (1, 3), (3, 1), ((0, 1), (2, 0)), (1, 2)),       # asymmetric padding, a stride over the rows
    ((2, 6, 2, 2), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),       # MobileNetV2's last maps: 2x2
    ((2, 3, 1, 1), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),       # one pixel: only the centre tap is inside
    ((2, 3, 5, 5), (3, 3), (2, 2), ((0, 0), (0, 0)), (1, 1)),       # no padding
    ((1, 2, 4, 4), (3, 3), (1, 1), ((5, 5), (4, 4)), (1, 1)),       # padding wider than the kernel reaches
]


@needs_library
@pytest.mark.parametrize("shape, ks, strides, pads, dils", DEPTHWISE_CASES)
def test_depthwise_convolution_in_c_equals_the_numpy_kernels(shape, ks, strides, pads, dils, monkeypatch):
    """The forward, Input@GRAD and Filter@GRAD, against the NumPy paths (per-channel columns, per-tap multiply-adds,
    the flipped-filter convolution) on strides, dilations, asymmetric and over-wide padding and 1x1 maps."""
    c = shape[1]
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((c, 1, *ks)).astype(np.float32)
    got = NC.FAST.forward(np, x, w, list(strides), list(pads), list(dils), c)
    g = rng.standard_normal(got.shape).astype(np.float32)
    got_dx, got_dw = NC.grads_in_parts(np, x, w, g, list(strides), list(pads), list(dils), c, True, True)
    only_dw = NC.grads_in_parts(np, x, w, g, list(strides), list(pads), list(dils), c, False, True)
    _numpy_path(monkeypatch)
    want = NC.FAST.forward(np, x, w, list(strides), list(pads), list(dils), c)
    want_dx, want_dw = NC.grads_in_parts(np, x, w, g, list(strides), list(pads), list(dils), c, True, True)
    _close(got, want)
    _close(got_dx, want_dx)
    _close(got_dw, want_dw, rtol=5e-5)
    assert only_dw[0] is None
    _close(only_dw[1], want_dw, rtol=5e-5)


COL2IM_CASES = [
    # (x shape, kernel, strides, pads before, dilations, columns' spatial size)
    ((2, 3, 8, 8), (3, 3), (1, 1), (1, 1), (1, 1), (8, 8)),
    ((2, 4, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1), (5, 4)),
    ((1, 2, 7, 7), (3, 3), (1, 1), (2, 2), (2, 2), (7, 7)),
    ((3, 2, 6, 5), (1, 3), (3, 1), (0, 2), (1, 2), (2, 5)),      # a stride over the rows, a dilated row of taps
    ((2, 3, 2, 2), (3, 3), (1, 1), (1, 1), (1, 1), (2, 2)),      # ResNet-18's last maps
    ((1, 2, 4, 4), (3, 3), (1, 1), (5, 4), (1, 1), (10, 8)),     # padding wider than the kernel reaches
    ((2, 5, 11, 10), (5, 5), (2, 3), (2, 1), (1, 1), (6, 3)),
    ((2, 2, 10, 9), (2, 2), (2, 2), (0, 0), (1, 1), (6, 5)),     # conv2d_transpose's output_padding: a row more
]


@needs_library
@pytest.mark.parametrize("shape, ks, strides, pads, dils, cols_hw", COL2IM_CASES)
def test_col2im_equals_the_tap_by_tap_adds(shape, ks, strides, pads, dils, cols_hw):
    """kernelcore/native/col2im.c against NumPy's col2im (one strided add per tap over a padded buffer, cropped):
    bit for bit, since each element sums the same terms from 0 in the same tap order, at 1-3 threads; and the
    adjoint of im2col (<im2col(x), cols> = <x, col2im(cols)>)."""
    n, c, h, w = shape
    oh, ow = cols_hw
    cols = rng.standard_normal((c * ks[0] * ks[1], n * oh * ow)).astype(np.float32)
    blocks = cols.reshape(c, ks[0], ks[1], n, oh, ow)
    full_h = max((oh - 1) * strides[0] + dils[0] * (ks[0] - 1) + 1, pads[0] + h)
    full_w = max((ow - 1) * strides[1] + dils[1] * (ks[1] - 1) + 1, pads[1] + w)
    want = np.zeros((n, c, full_h, full_w), np.float32)
    for ky in range(ks[0]):
        for kx in range(ks[1]):
            want[:, :, ky * dils[0]:ky * dils[0] + strides[0] * (oh - 1) + 1:strides[0],
                 kx * dils[1]:kx * dils[1] + strides[1] * (ow - 1) + 1:strides[1]] += \
                blocks[:, ky, kx].transpose(1, 0, 2, 3)
    want = want[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w]
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            got = native.col2im(cols, n, c, (h, w), ks, strides, pads, dils, cols_hw)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    x = rng.standard_normal(shape).astype(np.float32)  # im2col zeroes what col2im drops: adjoint on any geometry
    fwd = native.im2col(x, ks, strides, pads, dils, cols_hw)
    lhs, rhs = float((fwd.astype(np.float64) * cols).sum()), float((x.astype(np.float64) * want).sum())
    assert abs(lhs - rhs) <= 1e-5 * float(np.abs(fwd).sum() + 1)


@needs_library
@pytest.mark.parametrize("xshape, wshape, strides, pads, dils, out_hw", [
    ((2, 6, 4, 4), (6, 5, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (4, 4)),     # Input@GRAD of a stride-1 conv
    ((2, 6, 4, 4), (6, 5, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (7, 7)),     # and of a stride-2 one
    ((1, 4, 3, 5), (4, 3, 2, 3), (2, 1), ((0, 1), (1, 0)), (1, 2), (6, 7)),     # conv2d_transpose, output_padding
])
def test_conv_transpose_through_col2im_equals_the_numpy_adds(xshape, wshape, strides, pads, dils, out_hw,
                                                             monkeypatch):
    """conv_transpose_forward (a convolution's Input@GRAD, conv2d_transpose's output) by one GEMM and col2im.c
    against its NumPy adds (the GEMMs differ in orientation, so to float32 rounding)."""
    x = rng.standard_normal(xshape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    got = NC.FAST.transpose_forward(np, x, w, list(strides), list(pads), list(dils), 1, list(out_hw))
    _numpy_path(monkeypatch)
    want = NC.FAST.transpose_forward(np, x, w, list(strides), list(pads), list(dils), 1, list(out_hw))
    assert got.shape == want.shape == (xshape[0], wshape[1], *out_hw)
    _close(got, want)


@needs_library
def test_depthwise_grad_with_an_output_gradient_of_the_wrong_shape_is_not_read_out_of_bounds(monkeypatch):
    """A hostile program's Output@GRAD that is not the forward's output shape takes the NumPy path, which says
    what is wrong; the C kernel, which trusts its geometry, never sees it."""
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    called = []
    monkeypatch.setattr(native, "depthwise_conv2d_grads", lambda *a, **k: called.append(1))
    with pytest.raises(ValueError):
        NC.grads_in_parts(np, x, w, np.zeros((1, 3, 8, 8), np.float32), [1, 1], [(1, 1), (1, 1)], [1, 1], 3,
                           True, True)
    assert not called


POOL_CASES = [
    # (x shape, kernel, strides, pads ((top, bottom), (left, right)))
    ((2, 3, 32, 32), (3, 3), (2, 2), ((1, 1), (1, 1))),   # ResNet's stem pool
    ((2, 4, 8, 8), (2, 2), (2, 2), ((0, 0), (0, 0))),     # disjoint windows
    ((1, 2, 7, 5), (3, 2), (1, 2), ((1, 0), (0, 1))),     # overlapping, asymmetric padding
    ((2, 2, 5, 5), (3, 3), (2, 2), ((0, 1), (0, 1))),     # ceil mode's extra high-side window
    ((1, 3, 1, 1), (3, 3), (1, 1), ((1, 1), (1, 1))),
]


def _pool_ops(xs, ks, strides, pads):
    from kernelcore.grad import pool as V
    from kernelcore.ops import pool as P
    outs = [(xs[2 + i] + pads[i][0] + pads[i][1] - ks[i]) // strides[i] + 1 for i in range(2)]
    return P, V, outs


def _max_pool_attrs(ks, strides, pads):
    return dict(pooling_type="max", ksize=list(ks), strides=list(strides), paddings=[p for pair in pads for p in pair],
                global_pooling=False, adaptive=False, ceil_mode=False, exclusive=True, data_format="NCHW",
                padding_algorithm="EXPLICIT")


@needs_library
@pytest.mark.parametrize("xs, ks, strides, pads", POOL_CASES)
def test_max_pooling_in_c_equals_the_numpy_kernels(xs, ks, strides, pads, monkeypatch):
    """Forward and X@GRAD, ties included (a quantised input: many windows hold their max twice, and the gradient
    goes to the first in row-major order, as Paddle's), against the per-offset NumPy paths."""
    P, V, outs = _pool_ops(xs, ks, strides, pads)
    x = np.round(rng.standard_normal(xs) * 2).astype(np.float32)         # ties
    attrs = _max_pool_attrs(ks, strides, pads)
    got = prepared("pool2d")(_Ctx, [x], attrs)[0]
    g = rng.standard_normal(got.shape).astype(np.float32)
    got_dx = prepared("pool2d_grad")(_Ctx, [x, got, g], attrs)[0]
    want = P._max_by_offsets(np, x, ksize=list(ks), strides=list(strides), pads=list(pads), outs=outs)
    want_dx = V._max_grad_offsets(np, x, want, g, list(ks), list(strides), list(pads), outs)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-6, atol=1e-6)


@needs_library
def test_max_pooling_in_c_propagates_nan_as_numpys_maximum():
    P, _, outs = _pool_ops((1, 1, 4, 4), (2, 2), (2, 2), ((0, 0), (0, 0)))
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 3, 3] = -np.inf
    y = prepared("pool2d")(_Ctx, [x], _max_pool_attrs((2, 2), (2, 2), ((0, 0), (0, 0))))[0]
    want = P._max_by_offsets(np, x, ksize=[2, 2], strides=[2, 2], pads=[(0, 0), (0, 0)], outs=outs)
    np.testing.assert_array_equal(y, want)
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 1, 1] == 14


@needs_library
@pytest.mark.parametrize("shape", [(7,), (3, 5, 7, 9), (4, 96, 32, 32)])   # the last is shared over threads
@pytest.mark.parametrize("attrs", [dict(offset=3.0, threshold=6.0, scale=6.0),
                                   dict(offset=1.5, threshold=4.0, scale=5.0)])
def test_hard_swish_and_its_gradient_in_c_equal_numpys_bits(shape, attrs, monkeypatch):
    """kernelcore/native/hard_swish.c against the NumPy bodies it stands in for (ops/activation.py,
    grad/activation.py), through the op kernels: the same bits, NaN, +-inf, -0 and the clip's edges included, at 1-3
    threads."""
    from kernelcore.grad import activation as GA
    from kernelcore.ops import activation as AE
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    edges = [np.nan, np.inf, -np.inf, -0.0, -attrs["offset"], attrs["threshold"] - attrs["offset"], 0.0]
    x.reshape(-1)[:len(edges)] = edges[:x.size]
    g = rng.standard_normal(shape).astype(np.float32)
    g.reshape(-1)[-1] = np.inf
    got = {}
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            got[threads] = (prepared("hard_swish")(_Ctx, [x], attrs)[0],
                            prepared("hard_swish_grad")(_Ctx, [x, g], attrs)[0])
    with np.errstate(invalid="ignore"):
        want = (AE._hard_swish(np, x, attrs), g * GA._d_hard_swish(np, x, attrs))
    for threads, pair in got.items():
        for a, b in zip(pair, want):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32), err_msg=f"{threads} threads")


@needs_library
@pytest.mark.parametrize("shape", [(3, 5, 7, 9), (4, 64, 32, 32)])   # the second is shared over threads
@pytest.mark.parametrize("op, hi", [("relu", None), ("relu6", 6.0)])
def test_relu_gradients_in_c_equal_numpys(op, hi, shape):
    """Out@GRAD times the mask, the mask's edges (0 and the threshold) excluded, and a NaN or inf gradient under
    a zero mask still NaN (g * 0), as NumPy's product and Paddle's functor give."""
    out = np.clip(np.round(rng.standard_normal(shape) * 4), 0, hi).astype(np.float32)
    g = rng.standard_normal(out.shape).astype(np.float32)
    g.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    with threadpool_limits(2):
        got = native.masked_grad(out, g, 0.0, hi)
    mask = (out > 0) if hi is None else ((out > 0) & (out < np.float32(hi)))
    with np.errstate(invalid="ignore"):   # inf * 0, on purpose
        np.testing.assert_array_equal(got, g * mask)


@needs_library
@pytest.mark.parametrize("shape", [(7,), (3, 5, 7, 9), (4, 64, 32, 32)])   # the last is shared over threads
@pytest.mark.parametrize("op, attrs", [("relu", {}), ("relu6", {"threshold": 6.0}),
                                       ("brelu", {"t_min": -1.5, "t_max": 2.0}),
                                       ("brelu", {"t_min": 2.0, "t_max": 1.0})])   # bounds crossed: NumPy's clip
def test_relu_and_relu6_in_c_equal_numpys(op, attrs, shape, monkeypatch):
    """The ops' outputs bit for bit, NaN and the signs of zeros included (relu gives +0 for -0 as NumPy's maximum
    does, relu6 and brelu keep -0 as NumPy's clip does), at 1 and 2 threads."""
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.reshape(-1)[:7] = [np.nan, -0.0, np.inf, -np.inf, 6.0, 0.0, attrs.get("t_min", 0.0)]

    def run():  # the op's kernel, as the executor prepares it
        return prepared(op)(_Ctx, [x], attrs)[0]
    got, calls = {}, []
    real = native.clip
    monkeypatch.setattr(native, "clip", lambda *a, **k: calls.append(1) or real(*a, **k))
    for threads in (1, 2):
        monkeypatch.setattr(native, "threads", lambda t=threads: t)
        got[threads] = run()
    assert len(calls) == 2, "the op did not take the C kernel"
    with monkeypatch.context() as m:
        m.setattr(native, "ready", lambda *a: False)
        want = run()
    assert len(calls) == 2
    for g in got.values():
        assert g.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(g, want)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(want))


@pytest.mark.parametrize("x_shape, y_shape, plan", [
    ((8, 4, 128, 128), (8, 1, 1, 128), (8, 512, 128)),     # an attention mask over heads and rows
    ((8, 128, 32), (32,), (1, 1024, 32)),                  # a bias over the last dim
    ((8, 64, 16, 16), (8, 64, 16, 16), (1, 1, 131072)),    # equal shapes: a residual add
    ((8, 64, 16, 16), (64, 1, 1), None),                   # per channel: repeated over images and pixels
    ((4, 3, 5), (4, 1, 1), (4, 15, 1)),
    ((8, 4, 128, 128), (1, 4, 1, 128), None),              # two runs of repeated dims
    ((3, 5), (2, 3, 5), None),                             # y of higher rank: the output is not x's shape
    ((3, 1), (3, 4), None),                                # x broadcast: the output is not x's shape
])
def test_add_rows_plans_see_y_repeating_along_one_run_of_xs_dims(x_shape, y_shape, plan):
    assert native.add_rows_plan(x_shape, y_shape) == plan


@needs_library
@pytest.mark.parametrize("x_shape, y_shape", [((8, 4, 128, 128), (8, 1, 1, 128)), ((8, 128, 64), (64,)),
                                              ((3, 70001), (3, 70001)), ((4, 200, 96), (4, 1, 96))])
def test_elementwise_add_in_c_gives_numpys_bits(x_shape, y_shape, monkeypatch):
    """elementwise_add of large float32 arrays through add_rows.c: NumPy's add bit for bit (a NaN's payload,
    infinities, signed zeros), at 1-3 threads, through the op as a run prepares it; small arrays stay NumPy's.
    Where both operands are NaN the sum is NaN, its payload either one's."""
    import kernelcore as kc
    x = rng.standard_normal(x_shape).astype(np.float32)
    y = rng.standard_normal(y_shape).astype(np.float32)
    payload_nan = np.array([0x7FC0BEEF], np.uint32).view(np.float32)[0]
    x.reshape(-1)[:6] = [np.nan, -0.0, np.inf, -np.inf, 1.0, -0.0]
    specials = np.array([1.0, -0.0, -np.inf, 2.0, payload_nan, 0.0], np.float32)
    y.reshape(-1)[:min(6, y.size)] = specials[:y.size]
    x.reshape(-1)[7] = y.reshape(-1)[min(7, y.size - 1)] = np.nan  # one place where both are NaN (if it is one)
    with np.errstate(invalid="ignore"):
        want = np.add(x, y)
        both = np.isnan(x) & np.isnan(np.broadcast_to(y, x.shape))

    def program(xs, ys):
        prog = kc.Program()
        b = prog.global_block()
        b.create_var("x", list(xs.shape))
        b.create_var("y", list(ys.shape))
        b.append_op("elementwise_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["z"]}, {"axis": -1})
        return prog
    prog = program(x, y)
    calls = []
    real = native.add_rows
    monkeypatch.setattr(native, "add_rows", lambda *a: calls.append(1) or real(*a))
    for threads in (1, 2, 3):
        with threadpool_limits(threads), np.errstate(invalid="ignore"):
            (got,) = kc.Executor().run(prog, feed={"x": x, "y": y}, fetch_list=["z"], scope=kc.Scope())
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.isnan(got[both]).all()
        np.testing.assert_array_equal(got[~both].view(np.uint32), want[~both].view(np.uint32))
    assert len(calls) == 3, "the op did not take the C kernel"
    xs = x[:1, :1].copy()  # below native.ADD_MIN_ELEMENTS: NumPy's add
    ys = y[:1, :1].copy() if y.ndim == x.ndim else y
    with np.errstate(invalid="ignore"):
        (got,) = kc.Executor().run(program(xs, ys), feed={"x": xs, "y": ys}, fetch_list=["z"], scope=kc.Scope())
        np.testing.assert_array_equal(got.view(np.uint32), np.add(xs, ys).view(np.uint32))
    assert len(calls) == 3


@needs_library
def test_an_unaligned_array_stays_numpys():
    """A float32 array viewed from an odd byte offset of a buffer is not aligned: the C kernels refuse it, and the
    op gives NumPy's result."""
    raw = np.zeros(4 * 70000 + 1, np.uint8)
    x = raw[1:].view(np.float32)
    x[:] = np.arange(70000, dtype=np.float32)
    assert not x.flags.aligned and not native.ready(np, x)
    from kernelcore.native.elementwise import add_in_c
    np.testing.assert_array_equal(add_in_c(x, x), x + x)


def test_short_rows_and_small_adds_stay_numpys():
    """add_plan leaves NumPy's add the rows shorter than ADD_MIN_ROW (a [N, 1] y over [N, M]: two divisions an
    element in C) and arrays under ADD_MIN_ELEMENTS."""
    big = np.zeros((4, 40000, 1), np.float32)
    assert native.add_rows_plan(big.shape, (4, 1, 1)) == (4, 40000, 1)
    assert native.add_plan(np, big, np.zeros((4, 1, 1), np.float32)) is None
    assert native.add_plan(np, np.zeros((4, 64), np.float32), np.zeros(64, np.float32)) is None


@needs_library
def test_relu_of_a_numpy_scalar_and_a_nan_bound_stay_numpys():
    """A NumPy scalar in the scope (no buffer for C) and a NaN threshold (which NumPy's clip spreads to every
    element) take the NumPy path, with NumPy's results."""
    import kernelcore as kc
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("y", [])
    b.append_op("relu", {"X": ["y"]}, {"Out": ["z"]})
    scope = kc.Scope()
    scope.var("y").set(np.float32(-1.5))
    (z,) = kc.Executor().run(prog, feed={}, fetch_list=["z"], scope=scope)
    assert float(z) == 0.0
    x = np.array([-3.0, -0.0, 0.5, 7.0], np.float32)
    with np.errstate(invalid="ignore"):
        got = prepared("relu6")(_Ctx, [x], {"threshold": float("nan")})[0]
    assert np.isnan(got).all()


def _softmax_reference(x):
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@needs_library
@pytest.mark.parametrize("shape, spread", [((8, 4, 128, 128), 3.0), ((5, 7), 30.0), ((3, 1), 1.0), ((2, 3, 1000), 80.0),
                                           ((4, 64), 1e4)])
def test_softmax_in_c_is_the_shifted_formula(shape, spread):
    """Within a few float32 ulps of float64's exp(x - max) / sum, on logits far apart (rows where most terms
    underflow) and rows of one element; and its gradient out * (g - sum(g * out))."""
    x = (rng.standard_normal(shape) * spread).astype(np.float32)
    with threadpool_limits(2):
        got = prepared("softmax")(_Ctx, [x], {"axis": -1})[0]
    want = _softmax_reference(x)
    # x - max is rounded to float32 before exp (as in NumPy's kernel): ulp(20) / 2 is 1e-6 of exp(-20)
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=1e-30)
    g = rng.standard_normal(shape).astype(np.float32)
    dx = prepared("softmax_grad")(_Ctx, [got, g], {"axis": -1})[0]
    gd, od = g.astype(np.float64), got.astype(np.float64)
    want_dx = od * (gd - (gd * od).sum(axis=-1, keepdims=True))
    # sum(g * out) in float32 (as NumPy's einsum): ~1e-7 of its terms' size, times out
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-6 * float(np.abs(gd).max()))


@needs_library
def test_softmax_in_c_handles_nan_and_infinities_as_numpy():
    """A NaN or +inf makes its row NaN, -inf entries give 0, a row of -inf only is NaN (as NumPy's shifted
    formula), and an exp that underflows gives 0."""
    x = np.array([[0.0, np.nan, 1.0], [np.inf, 0.0, 1.0], [-np.inf, 0.0, 0.0], [-np.inf, -np.inf, -np.inf],
                  [0.0, -200.0, -90.0]], np.float32)
    got = prepared("softmax")(_Ctx, [x], {"axis": -1})[0]
    with np.errstate(invalid="ignore"):
        want = _softmax_reference(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-6, atol=1e-38)
    assert got[2, 0] == 0 and got[4, 1] == 0


@needs_library
@pytest.mark.parametrize("shape, axis", [((8, 128, 32), 2), ((4, 6, 5), 1), ((3, 1), 1), ((64, 2048), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_in_c_equals_the_numpy_kernels(shape, axis, affine, monkeypatch):
    """Forward (Y, Mean, Variance) and every gradient, with and without Scale and Bias (dispensable), against the
    NumPy kernels; the large case is shared over threads."""
    right = int(np.prod(shape[axis:]))
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, right).astype(np.float32) if affine else None
    bias = rng.standard_normal(right).astype(np.float32) if affine else None
    g = rng.standard_normal(shape).astype(np.float32)
    attrs = dict(begin_norm_axis=axis, epsilon=1e-5)

    def both():
        y, mean, var = prepared("layer_norm")(_Ctx, (x, scale, bias), attrs)
        return (y, mean, var), prepared("layer_norm_grad")(_Ctx, (x, scale, bias, mean, var, g), attrs)
    with threadpool_limits(2):
        got_fwd, got_grad = both()
    _numpy_path(monkeypatch)
    want_fwd, want_grad = both()
    for a, b in zip(got_fwd, want_fwd):
        _close(a, b)
    for a, b in zip(got_grad, want_grad):
        assert (a is None) == (b is None)
        if b is not None:
            _close(a, b, rtol=1e-4)


@needs_library
@pytest.mark.parametrize("shape", [(8, 128, 64), (7,), (3, 5)])
def test_gelu_in_c_equals_the_numpy_kernels(shape, monkeypatch):
    """Exact gelu and its gradient: the same operations as ops/pointwise.py's normal_cdf, so within a few ulps
    of the NumPy path, over the range where Phi goes from 0 to 1, and at NaN and +-inf."""
    from kernelcore.grad import pointwise as GM
    from kernelcore.ops import pointwise as M
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    g = rng.standard_normal(shape).astype(np.float32)
    with threadpool_limits(2), np.errstate(invalid="ignore"):
        exact = {"approximate": False}
        got, got_dx = prepared("gelu")(_Ctx, [x], exact)[0], prepared("gelu_grad")(_Ctx, [x, g], exact)[0]
        _numpy_path(monkeypatch)
        want, want_dx = M.gelu_of(np, x, False), GM._gelu_grad(np, x, g, {"approximate": False})
    for a, b in ((got, want), (got_dx, want_dx)):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        fin = np.isfinite(b)
        # Phi(x) + x phi(x) cancels for x below -2: a few float32 ulps of its terms (FMA contractions) apart
        np.testing.assert_allclose(a[fin], b[fin], rtol=2e-6, atol=1e-6)


@needs_library
def test_loops_of_different_widths_in_turn_each_run_once(monkeypatch):
    """Eight threads asked for (more than this machine's cores), loops of eight and of two shares in turn: the
    workers left out of a loop are never handed it (pool.c), every loop returns only when its shares are done,
    and the results stay the whole array's."""
    monkeypatch.setattr(native, "threads", lambda: 8)
    wide = rng.standard_normal(8 * 32768).astype(np.float32)
    narrow = rng.standard_normal(2 * 32768).astype(np.float32)         # pool.h: KC_GRAIN a thread
    gw, gn = np.ones_like(wide), np.ones_like(narrow)
    want_w, want_n = gw * (wide > 0), gn * (narrow > 0)
    for _ in range(300):
        np.testing.assert_array_equal(native.masked_grad(wide, gw, 0.0, None), want_w)
        np.testing.assert_array_equal(native.masked_grad(narrow, gn, 0.0, None), want_n)


@needs_library
@pytest.mark.parametrize("shape, ks, strides, pads, dils", [
    ((2, 3, 8, 8), (3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),     # a "same" convolution: one shifted copy a block
    ((2, 3, 9, 7), (3, 3), [1, 1], [(2, 2), (2, 2)], [2, 2]),     # dilated "same"
    ((1, 2, 5, 5), (3, 3), [1, 1], [(3, 0), (0, 3)], [1, 1]),     # one-sided pads: rows of copies
    ((3, 4, 2, 2), (3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),     # 2x2 maps: the lookup table
    ((2, 5, 3, 3), (2, 2), [2, 2], [(4, 1), (0, 5)], [1, 3]),     # pads wider than the kernel, strided table
    ((2, 3, 11, 13), (7, 7), [2, 2], [(3, 3), (3, 3)], [1, 1]),   # a stem: strided rows
    ((1, 1, 1, 1), (1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),
])
def test_im2col_in_c_equals_the_window_view(shape, ks, strides, pads, dils, monkeypatch):
    """The columns bit for bit (the same elements copied, zeros where the padding is), on each of im2col.c's three
    ways of writing a block."""
    x = rng.standard_normal(shape).astype(np.float32)
    outs = [C.conv_out_size(shape[2 + i], ks[i], pads[i], strides[i], dils[i]) for i in range(2)]
    got = NC.FAST.im2col(np, x, ks, strides, pads, dils, outs)
    _numpy_path(monkeypatch)
    np.testing.assert_array_equal(got, NC.FAST.im2col(np, x, ks, strides, pads, dils, outs))


CONV_CASES = [
    # (x shape, filter shape, strides, pads, dils)
    ((2, 3, 8, 8), (4, 3, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),       # "same", 64-pixel maps: runs
    ((2, 3, 9, 7), (5, 3, 3, 3), [1, 1], [(2, 2), (2, 2)], [2, 2]),       # dilated, panels across images
    ((1, 2, 5, 5), (3, 2, 3, 3), [1, 1], [(3, 0), (0, 3)], [1, 1]),       # one-sided pads
    ((3, 20, 2, 2), (7, 20, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),     # 2x2 maps: the table
    ((2, 17, 16, 16), (9, 17, 3, 3), [2, 2], [(1, 1), (1, 1)], [1, 1]),   # narrow maps, many channels: the table
    ((2, 5, 3, 3), (6, 5, 2, 2), [2, 2], [(4, 1), (0, 5)], [1, 3]),       # pads wider than the kernel
    ((2, 3, 11, 13), (16, 3, 7, 7), [2, 2], [(3, 3), (3, 3)], [1, 1]),    # a stem: strided runs
    ((2, 40, 4, 4), (130, 40, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),   # > 64 filters: panels first, then chunks
    ((3, 8, 8, 8), (67, 8, 1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),      # 1x1: panels read in place, 67 rows
    ((3, 8, 5, 7), (11, 8, 1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),      # 1x1 on 35-pixel maps: packed panels
    ((2, 6, 4, 4), (5, 6, 1, 1), [2, 2], [(0, 0), (0, 0)], [1, 1]),       # 1x1, stride 2
    ((1, 1, 1, 1), (1, 1, 1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),
    ((2, 2, 3, 70), (3, 2, 1, 70), [1, 1], [(0, 0), (0, 0)], [1, 1]),     # a kernel wider than the runs' table
    # large enough for conv_gemm.c to take more than one thread (a thread per 2M multiply-adds)
    ((2, 32, 16, 16), (40, 32, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),  # panels shared
    ((2, 64, 16, 16), (70, 64, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),  # chunks of filter rows shared
    ((8, 64, 16, 16), (64, 64, 1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),  # 1x1 in place
    ((3, 32, 15, 15), (40, 32, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),  # panels across images: the tile
    ((3, 64, 15, 15), (70, 64, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),  # the tile, chunks of filter rows
    ((4, 64, 15, 15), (130, 64, 1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),  # 1x1, 225-pixel maps: some packed
    ((4, 64, 16, 16), (130, 64, 1, 1), [1, 1], [(0, 0), (0, 0)], [1, 1]),  # 1x1 all in place, chunks
]


@needs_library
@pytest.mark.parametrize("xs, ws, strides, pads, dils", CONV_CASES)
def test_the_convolution_in_c_matches_the_numpy_path(xs, ws, strides, pads, dils, monkeypatch):
    """conv_gemm.c's output against the window view's columns times OpenBLAS (the NumPy path): the same sums in
    another order, so within float32 rounding of the terms' size; and the same bits at 1, 2 and 3 threads (each
    output element is one walk down its filter row, whoever makes it)."""
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    outs = [C.conv_out_size(xs[2 + i], ws[2 + i], pads[i], strides[i], dils[i]) for i in range(2)]
    got, calls = {}, []
    real = native.conv2d
    monkeypatch.setattr(native, "conv2d", lambda *a: calls.append(1) or real(*a))
    for threads in (1, 2, 3):
        monkeypatch.setattr(native, "threads", lambda t=threads: t)
        got[threads] = NC.FAST.forward(np, x, w, strides, pads, dils, 1)
    assert len(calls) == 3, "the convolution did not take the C kernel"
    with monkeypatch.context() as m:
        m.setattr(native, "ready", lambda *a: False)
        want = NC.FAST.forward(np, x, w, strides, pads, dils, 1)
    assert len(calls) == 3
    assert got[1].shape == want.shape == (xs[0], ws[0], *outs)
    scale = np.sqrt(np.prod(ws[1:])) * 1e-5
    np.testing.assert_allclose(got[1], want, rtol=1e-5, atol=scale)
    np.testing.assert_array_equal(got[2], got[1])
    np.testing.assert_array_equal(got[3], got[1])


@needs_library
def test_the_convolution_in_c_takes_only_what_it_can():
    """Float32 host arrays, C-contiguous, 2-D, one group, a filter over x's channels: everything else is the NumPy
    path's (groups, float64, a transposed view, a NumPy scalar, 3-D, a filter of other channels)."""
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    assert native.conv2d_ready(np, x, w, 1)
    assert not native.conv2d_ready(np, x, w[:, :2], 2)
    assert not native.conv2d_ready(np, x.astype(np.float64), w, 1)
    assert not native.conv2d_ready(np, x.transpose(0, 1, 3, 2), w, 1)
    assert not native.conv2d_ready(np, x[..., None], w[..., None], 1)
    assert not native.conv2d_ready(np, x, w[:, :3].copy(), 1)   # a filter over other channels: never read past it
    assert not native.ready(np, np.float32(1.0))


@needs_library
def test_the_convolution_in_c_keeps_nan_and_inf_where_they_land():
    """A NaN or inf in the input reaches exactly the outputs whose window holds it (the padding's zeros are never
    multiplied in, as in the columns the NumPy path makes)."""
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x[1, 2, 0, 5] = np.nan
    x[0, 0, 3, 3] = np.inf
    got = native.conv2d(x, np.abs(w), [1, 1], [1, 1], [1, 1], (6, 6))
    bad = ~np.isfinite(got)
    want = np.zeros_like(bad)
    want[1, :, 0:2, 4:6] = True
    want[0, :, 2:5, 2:5] = True
    np.testing.assert_array_equal(bad, want)
    assert np.isnan(got[1, :, 0:2, 4:6]).all() and np.isposinf(got[0, :, 2:5, 2:5]).all()


@needs_library
@pytest.mark.parametrize("m, k, n", [(32, 256, 1024), (32, 1024, 256), (13, 70, 33), (1, 1, 1), (7, 5, 31),
                                     (8, 3, 64), (3, 129, 65), (2, 17, 100), (65, 9, 40), (1600, 128, 96),
                                     (203, 33, 70)])
def test_the_packed_gemm_for_rnn_steps_equals_numpys(m, k, n):
    """gemm_packed.c (an RNN step's product with its recurrent weight, packed once; an input projection over all
    timesteps, in chunks of 32 rows above 64): NumPy's product within float32 rounding on row counts of every block
    size (8, 4, 2, 1) and column counts off the 32-wide panels; the same bits at any thread count; the operands left
    as they were."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    before = a.copy(), b.copy()
    packed = native.PackedColumns(b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    results = []
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            results.append(native.gemm_packed(a, packed))
    np.testing.assert_allclose(results[0], want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])


@needs_library
def test_rnn_steps_use_the_packed_weight_and_fall_back_for_other_operands():
    """recurrent_weight packs a float32 W_hh^T once (from the transposed view, no copy first); a step's product
    takes the C GEMM for float32 rows, contiguous or not, and NumPy's for anything else (float64), with the same
    values; a float64 weight is not packed. Where the C kernels run the steps, the rnn ops run split
    (kernelcore/runtime/cpu_parts.py), with OpenBLAS held at one thread."""
    from kernelcore.runtime import cpu_parts
    from kernelcore.grad import rnn as GR
    from kernelcore.ops import rnn as R
    assert NR.STEPS_IN_C and R.RNN.runs_in_parts and not R.RNN.needs_blas_threads
    assert GR.RNN_GRAD.runs_in_parts and cpu_parts.wants_parts([R.RNN])
    w_hh = rng.standard_normal((4 * 6, 6)).astype(np.float32)
    w = NR.FAST.recurrent_weight(np, w_hh)
    assert isinstance(w, native.PackedColumns)
    np.testing.assert_array_equal(w.matrix, w_hh.T)
    h = rng.standard_normal((5, 12)).astype(np.float32)[:, ::2]  # not contiguous
    want = h.astype(np.float64) @ w_hh.T.astype(np.float64)
    for a in (h, np.ascontiguousarray(h), h.astype(np.float64)):
        np.testing.assert_allclose(NR.FAST.recurrent_product(np, a, w), want, rtol=1e-5, atol=1e-5)
    assert not isinstance(NR.FAST.recurrent_weight(np, w_hh.astype(np.float64)), native.PackedColumns)


@needs_library
@pytest.mark.parametrize("B, H, spread", [(32, 256, 1.0), (3, 5, 8.0), (1, 1, 0.1), (13, 40, 3.0), (9, 33, 1.0),
                                          (64, 64, 30.0)])
def test_the_lstm_step_in_c_matches_the_numpy_step(B, H, spread, monkeypatch):
    """lstm_step.c (the step's GEMM, activations, c and h in one call) against cell_forward's NumPy passes on the
    same packed weight: every row block size and a hidden size off the 32-unit slices, pre-activations from
    near zero to saturation; the same bits at any thread count, h written into the given row, inputs left as
    they were. Its activations are kc_math.h's, not NumPy's, so a few float32 ulps apart."""
    from kernelcore.ops import rnn as R
    x_proj = (rng.standard_normal((B, 4 * H)) * spread).astype(np.float32)
    h_prev, c_prev = (rng.standard_normal((B, H)).astype(np.float32) for _ in range(2))
    w_hh = rng.standard_normal((4 * H, H)).astype(np.float32) * np.float32(0.3)
    w = NR.FAST.recurrent_weight(np, w_hh, 4)
    assert isinstance(w, native.PackedColumns) and w.groups == 4
    before = [a.copy() for a in (x_proj, h_prev, c_prev, w_hh)]
    runs = []
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            row = np.full((B, H), np.nan, np.float32)
            runs.append(R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, w, None, h_out=row, steps=NR.FAST))
            assert runs[-1][1] is row
    for a, b in zip((x_proj, h_prev, c_prev, w_hh), before):
        np.testing.assert_array_equal(a, b)
    for run in runs[1:]:
        for a, b in zip(run, runs[0]):
            np.testing.assert_array_equal(a, b)
    _numpy_path(monkeypatch)
    want = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, w, None, steps=NR.FAST)
    for name, a, b in zip(("gates", "h", "c"), runs[0], want):
        # the GEMM's sums in another order (up to ~k ulps of the largest term), then a few ulps of activation
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6 * np.sqrt(H) * spread, err_msg=name)


@needs_library
def test_the_lstm_steps_activations_are_float32_accurate_and_keep_nan():
    """With h_prev = 0 the step's gates are the activations of x_proj alone: sigmoid for i, f, o and tanh for the
    candidate, within 2.5e-7 relative of float64's (NumPy's own float32 tanh is within 1.1e-7) from 1e-30 to
    saturation (0 where sigmoid leaves float32's normal range), +-inf to their limits, NaN to NaN; h = o tanh(c)
    likewise."""
    H = 4096
    z = np.concatenate([np.geomspace(1e-30, 40.0, H // 2 - 4), [0.0, 100.0, np.inf, np.nan]]).astype(np.float32)
    z = np.concatenate([z, -z])
    x_proj = np.tile(z, 4)[None, :]
    c_prev = np.zeros((1, H), np.float32)
    w = native.PackedColumns(np.zeros((3, 4 * H), np.float32), 4)
    with np.errstate(all="ignore"):
        gates, h, c = native.lstm_step(np.zeros((1, 3), np.float32), w, x_proj, c_prev)
        zz = z.astype(np.float64)
        sig, tanh = 1 / (1 + np.exp(-zz)), np.tanh(zz)
        want_c = sig * tanh  # f * 0 + i * g
        want = np.concatenate([sig, sig, tanh, sig]), want_c, sig * np.tanh(want_c.astype(np.float32))
    for name, got, ref in (("gates", gates[0], want[0]), ("c", c[0], want[1]), ("h", h[0], want[2])):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=name)
        ok = ~np.isnan(ref)
        # atol: float32's smallest normal; below it (sigmoid of -88 and less) the C kernels give 0
        np.testing.assert_allclose(got[ok], ref[ok], rtol=2.5e-7 if name == "gates" else 6e-7,
                                   atol=float(np.finfo(np.float32).tiny), err_msg=name)


@needs_library
def test_an_lstm_step_may_write_h_over_h_prev():
    """cell_forward with h_out the very array h_prev is (a caller stepping in place): the C step writes h block by
    block while later blocks still read h_prev, so native.lstm_step writes it elsewhere first; h is the fresh
    step's, in h_out."""
    from kernelcore.ops import rnn as R
    B, H = 4, 40
    x_proj = rng.standard_normal((B, 4 * H)).astype(np.float32)
    h_prev, c_prev = (rng.standard_normal((B, H)).astype(np.float32) for _ in range(2))
    w = NR.FAST.recurrent_weight(np, rng.standard_normal((4 * H, H)).astype(np.float32), 4)
    _, want, _ = R.cell_forward(np, "LSTM", x_proj, h_prev.copy(), c_prev, w, None, steps=NR.FAST)
    _, h, _ = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, w, None, h_out=h_prev, steps=NR.FAST)
    assert h is h_prev
    np.testing.assert_allclose(h, want, rtol=2e-6, atol=2e-6)


@needs_library
@pytest.mark.parametrize("B, H", [(32, 256), (3, 5), (1, 1), (13, 40), (9, 33)])
def test_the_lstm_step_backward_in_c_matches_the_numpy_passes(B, H, monkeypatch):
    """lstm_step.c's backward (d_pre and dc_prev in one pass, then dh_prev = d_pre @ W_hh packed) against
    _lstm_cell_backward's NumPy passes on a step's kept values: the same operations in the same order but for
    tanh(c) (kc_math.h's), so a few float32 ulps apart; the same bits at any thread count; the step's values and
    the incoming gradients left as they were."""
    from kernelcore.grad import rnn as GR
    from kernelcore.ops import rnn as R
    from kernelcore.runtime.scope import Scope
    x_proj = (rng.standard_normal((B, 4 * H)) * 2).astype(np.float32)
    h_prev, c_prev, dh, dc = (rng.standard_normal((B, H)).astype(np.float32) for _ in range(4))
    w_hh = rng.standard_normal((4 * H, H)).astype(np.float32) * np.float32(0.3)
    gates, _, c = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, NR.FAST.recurrent_weight(np, w_hh, 4), None,
                                 steps=NR.FAST)
    s = Scope()
    for name, v in (("gates", gates), ("c", c), ("c_prev", c_prev)):
        s.var(name).value = v
    before = [a.copy() for a in (gates, c, c_prev, dh, dc, w_hh)]
    cand = GR.lstm_candidate_columns(np, np.dtype(np.float32), H)
    w_back = NR.FAST.step_matrix(np, w_hh)

    def backward():
        d_pre = np.full((B, 4 * H), np.nan, np.float32)
        dh_prev, dc_prev = GR._lstm_cell_backward(np, s, dh, dc, w_back, cand, d_pre, np.empty_like(d_pre),
                                                  steps=NR.FAST)
        return d_pre, dh_prev, dc_prev
    runs = []
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            runs.append(backward())
    for run in runs[1:]:
        for a, b in zip(run, runs[0]):
            np.testing.assert_array_equal(a, b)
    for a, b in zip((gates, c, c_prev, dh, dc, w_hh), before):
        np.testing.assert_array_equal(a, b)
    _numpy_path(monkeypatch)
    want = backward()
    for name, a, b in zip(("d_pre", "dh_prev", "dc_prev"), runs[0], want):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6 * (np.sqrt(4 * H) if name == "dh_prev" else 1),
                                   err_msg=name)


@needs_library
def test_packed_gate_groups_start_panels_of_their_own():
    """PackedColumns(b, groups=4) packs each gate's columns apart (for lstm_step); gemm_packed takes it only where
    that layout is the plain one (hidden a multiple of 32), and recurrent_product falls back to NumPy elsewhere
    with the same values."""
    for hidden, plain in ((32, True), (5, False)):
        b = rng.standard_normal((7, 4 * hidden)).astype(np.float32)
        w = native.PackedColumns(b, 4)
        assert w.plain == plain and w.packed.size == 4 * ((hidden + 31) // 32) * 32 * 7
        a = rng.standard_normal((3, 7)).astype(np.float32)
        np.testing.assert_allclose(NR.FAST.recurrent_product(np, a, w), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="groups"):
        native.PackedColumns(np.zeros((2, 6), np.float32), 4)


@needs_library
@pytest.mark.parametrize("m", [5, 100])
def test_the_packed_gemm_adds_a_bias_row_to_every_row(m):
    """gemm_packed(a, B, bias) with a 1-D bias: the rnn op's input projections x W_ih^T + bias in one pass, on the
    panel path (few rows) and the chunked one."""
    a = rng.standard_normal((m, 20)).astype(np.float32)
    w_ih = rng.standard_normal((70, 20)).astype(np.float32)
    bias = rng.standard_normal(70).astype(np.float32)
    want = a.astype(np.float64) @ w_ih.T + bias
    np.testing.assert_allclose(NR.FAST.input_projection(np, a, w_ih, bias), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(native.gemm_packed(a, native.PackedColumns(w_ih.T), bias), want, rtol=1e-5,
                               atol=1e-5)


@needs_library
def test_the_packed_gemm_adds_its_addend_as_it_writes():
    """gemm_packed(a, B, add) = add + a @ B on every block size and a panel's ragged edge; add left as it was."""
    a = rng.standard_normal((13, 40)).astype(np.float32)
    b = rng.standard_normal((40, 70)).astype(np.float32)
    add = rng.standard_normal((13, 70)).astype(np.float32)
    before = add.copy()
    got = native.gemm_packed(a, native.PackedColumns(b), add)
    np.testing.assert_allclose(got, add + a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(add, before)


@needs_library
@pytest.mark.parametrize("B, H, T", [(32, 256, 3), (3, 5, 4), (1, 1, 1), (13, 40, 5), (9, 33, 2)])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_whole_lstm_pass_in_c_equals_its_steps_one_by_one(B, H, T, reverse):
    """native.lstm_sequence (lstm_step.c's steps in one call, no gates kept) against native.lstm_step called step
    after step, each h_prev the previous step's h: the same bits for every h and the last c, at 1-3 threads, the
    inputs left as they were."""
    x_proj = (rng.standard_normal((T, B, 4 * H)) * 2).astype(np.float32)
    h0, c0 = (rng.standard_normal((B, H)).astype(np.float32) for _ in range(2))
    w = NR.FAST.recurrent_weight(np, (rng.standard_normal((4 * H, H)) * 0.3).astype(np.float32), 4)
    before = [a.copy() for a in (x_proj, h0, c0)]
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            out = np.full((T, B, H), np.nan, np.float32)
            c_last = native.lstm_sequence(x_proj, h0, c0, w, out, reverse)
            h, c = h0, c0
            for t in (range(T - 1, -1, -1) if reverse else range(T)):
                _, h, c = native.lstm_step(h, w, x_proj[t], c)
                np.testing.assert_array_equal(out[t], h, err_msg=f"h of step {t}, {threads} threads")
            np.testing.assert_array_equal(c_last, c)
    for a, b in zip((x_proj, h0, c0), before):
        np.testing.assert_array_equal(a, b)


@needs_library
def test_an_unobserved_lstm_runs_each_pass_in_one_call(monkeypatch):
    """The rnn op of a run nobody observes (no trace, no debugger) runs each (layer, direction) as one
    native.lstm_sequence call; traced, with SequenceLength or in training it steps through scopes as before. Both
    ways give the same bits (out and the final states)."""
    from test_paddle_rnn import rnn_program
    calls = {"sequence": 0, "step": 0}
    real_sequence, real_step = native.lstm_sequence, native.lstm_step

    def counted(name, fn):
        def call(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return call
    monkeypatch.setattr(native, "lstm_sequence", counted("sequence", real_sequence))
    monkeypatch.setattr(native, "lstm_step", counted("step", real_step))
    prog, feed, _, fetch = rnn_program("LSTM", 2, bidirec=True, T=7, B=5, I=6, H=40)
    exe = kc.Executor()
    plain = exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    assert calls == {"sequence": 4, "step": 0}  # 2 layers x 2 directions
    with kc.trace():
        traced = exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    assert calls == {"sequence": 4, "step": 4 * 7}
    for a, b in zip(plain, traced):
        np.testing.assert_array_equal(a, b)
    exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope(), training=True)
    assert calls["sequence"] == 4
    prog, feed, _, fetch = rnn_program("LSTM", 1, seq_len=[7, 2, 4, 1, 5], T=7, B=5, I=6, H=40)
    exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    assert calls["sequence"] == 4


@needs_library
def test_an_lstm_input_narrower_than_its_weights_steps_in_numpy(monkeypatch):
    """A float16 Input with float32 weights: its input projection comes out float32 but Out is float16, which the
    C pass must not write (it would write twice Out's bytes); the op steps as before, as in a traced run."""
    from test_paddle_rnn import rnn_program
    calls = []
    real = native.lstm_sequence
    monkeypatch.setattr(native, "lstm_sequence", lambda *a, **k: calls.append(1) or real(*a, **k))
    prog, feed, _, fetch = rnn_program("LSTM", 1, T=5, B=4, I=6, H=40, x_dtype="float16")
    exe = kc.Executor()
    plain = exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    with kc.trace():
        traced = exe.run(prog, feed=feed, fetch_list=fetch, scope=kc.Scope())
    assert not calls and plain[0].dtype == np.float16
    for a, b in zip(plain, traced):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="do not make a pass"):  # the wrapper refuses such an Out itself
        w = native.PackedColumns(np.zeros((40, 160), np.float32), 4)
        h0 = np.zeros((4, 40), np.float32)
        native.lstm_sequence(np.zeros((5, 4, 160), np.float32), h0, h0, w, np.empty((5, 4, 40), np.float16), False)


def _depthwise_valid_taps_reference(x, w, stride, pad, dils=(1, 1)):
    """A depthwise convolution in float32 (pad: both sides, an int or (rows, columns)), each output the sum from +0
    of its window's taps inside the image, in row-major tap order (what kc_depthwise_conv2d_f32 computes; padding
    never multiplied)."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    ph, pw = (pad, pad) if np.isscalar(pad) else pad
    oh, ow = (h + 2 * ph - dils[0] * (kh - 1) - 1) // stride + 1, (wd + 2 * pw - dils[1] * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, c, oh, ow), np.float32)
    for oy in range(oh):
        for ox in range(ow):
            acc = np.zeros((n, c), np.float32)
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * stride - ph + ky * dils[0], ox * stride - pw + kx * dils[1]
                    if 0 <= iy < h and 0 <= ix < wd:
                        acc = acc + w[None, :, 0, ky, kx] * x[:, :, iy, ix]
            out[:, :, oy, ox] = acc
    return out


@needs_library
@pytest.mark.parametrize("h, stride", [(1, 1), (2, 1), (2, 2), (3, 2), (4, 1), (4, 2), (5, 1), (9, 2)])
def test_depthwise_3x3_on_small_maps_sums_only_the_taps_inside(h, stride):
    """MobileNet's 3x3 depthwise layers on maps where most outputs cross the border (depthwise_conv.c's output_at):
    bit for bit the in-image taps' sum, an infinite tap over the padding never making NaN, at 1-3 threads."""
    x = rng.standard_normal((3, 20, h, h)).astype(np.float32)
    w = rng.standard_normal((20, 1, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0] = np.inf  # the top-left tap: over the padding for the first row and column of outputs
    want = _depthwise_valid_taps_reference(x, w, stride, 1)
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            got = native.depthwise_conv2d(x, w, [stride, stride], [1, 1], [1, 1], want.shape[2:])
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _same_bits_or_both_nan(got, want, what):
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=what)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32), err_msg=what)


def _depthwise_filter_grad_reference(x, g, pad, strides=(1, 1), ks=(3, 3), dils=(1, 1)):
    """Filter@GRAD of a depthwise convolution in float64 ([C, 1, kh, kw]), and each tap's sum of |terms|."""
    ph, pw = (pad, pad) if np.isscalar(pad) else pad
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (ph, ph + ks[0] * dils[0]), (pw, pw + ks[1] * dils[1])])
    oh, ow = g.shape[2:]
    g64 = g.astype(np.float64)
    sy, sx = strides
    taps = [(ky, kx) for ky in range(ks[0]) for kx in range(ks[1])]

    def window(ky, kx):
        y0, x0 = ky * dils[0], kx * dils[1]
        return xp[:, :, y0:y0 + sy * (oh - 1) + 1:sy, x0:x0 + sx * (ow - 1) + 1:sx]
    with np.errstate(invalid="ignore"):
        dw = np.stack([np.einsum("ncyx,ncyx->c", g64, window(*t)) for t in taps], axis=1)
        scale = np.stack([np.einsum("ncyx,ncyx->c", np.abs(g64), np.abs(window(*t))) for t in taps], axis=1)
    return dw.reshape(-1, 1, *ks), scale.reshape(-1, 1, *ks)


def _assert_filter_grad(got_dw, want_dw, scale, finite_channels, what):
    np.testing.assert_array_equal(np.isnan(got_dw), np.isnan(want_dw), err_msg=f"{what}: NaN")
    np.testing.assert_array_equal(np.isposinf(got_dw), np.isposinf(want_dw), err_msg=f"{what}: +inf")
    np.testing.assert_array_equal(np.isneginf(got_dw), np.isneginf(want_dw), err_msg=f"{what}: -inf")
    finite = np.isfinite(want_dw)
    assert finite[finite_channels].all()
    assert np.all(np.abs(got_dw[finite] - want_dw[finite]) <= 2e-6 * scale[finite] + 1e-30), what


@needs_library
@pytest.mark.parametrize("n, h, w, pad, ks, dils", [
    (7, 32, 32, 1, (3, 3), (1, 1)), (3, 17, 9, 1, (3, 3), (1, 1)), (11, 4, 4, 1, (3, 3), (1, 1)),
    (2, 6, 5, 0, (3, 3), (1, 1)), (5, 3, 7, 2, (3, 3), (1, 1)), (9, 2, 2, 1, (3, 3), (1, 1)),
    (4, 40, 3, 1, (3, 3), (1, 1)),
    (5, 14, 14, 2, (5, 5), (1, 1)), (9, 7, 7, 2, (5, 5), (1, 1)), (3, 12, 9, 1, (5, 5), (1, 1)),   # MobileNetV3's
    (2, 11, 13, 3, (7, 7), (1, 1)), (4, 6, 8, (0, 1), (1, 3), (1, 1)), (3, 10, 9, 2, (3, 3), (2, 2))])
def test_depthwise_stride_1_planes_in_groups_sum_only_the_taps_inside(n, h, w, pad, ks, dils):
    """The stride-1 paths that pad a channel's planes into one scratch and walk them flat (depthwise_conv.c's
    stacked_forward and stacked_filter_grad, 3x3 in one expression, other kernels a pass per tap; groups of images
    with a remainder where the maps are large). The forward and Input@GRAD (the flipped filter's forward where the
    dilation is 1): bit for bit the in-image taps' sum; a channel with an infinite tap and one with a NaN tap take
    the row path (the padding's zeros must not make NaN). Filter@GRAD: within float32 rounding of a float64 sum; a
    channel whose x holds an infinity at the map's left edge (which the flat walk multiplies by the zero gradients
    between rows) gives the infinities and NaN of the convolution's own terms. At 1-3 threads."""
    x = rng.standard_normal((n, 6, h, w)).astype(np.float32)
    wt = rng.standard_normal((6, 1, *ks)).astype(np.float32)
    wt[0, 0, 0, 0], wt[1, 0, ks[0] // 2, ks[1] // 2] = np.inf, np.nan
    pads = (pad, pad) if np.isscalar(pad) else pad
    want = _depthwise_valid_taps_reference(x, wt, 1, pads, dils)
    g = rng.standard_normal(want.shape).astype(np.float32)
    want_dx = _depthwise_valid_taps_reference(
        g, np.ascontiguousarray(wt[:, :, ::-1, ::-1]), 1,
        tuple((ks[i] - 1) * dils[i] - pads[i] for i in range(2)), dils)[:, :, :h, :w]
    x[n - 1, 2, h // 2, 0] = np.inf
    want_dw, scale = _depthwise_filter_grad_reference(x, g, pads, (1, 1), ks, dils)
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            got = native.depthwise_conv2d(x, wt, [1, 1], list(pads), list(dils), want.shape[2:])
            got_dx, got_dw = native.depthwise_conv2d_grads(x, wt, g, [1, 1], list(pads), list(dils), True, True)
        finite_x = np.isfinite(x).all(axis=(0, 2, 3))
        _same_bits_or_both_nan(got[:, finite_x], want[:, finite_x], f"forward, {threads} threads")
        if dils == (1, 1):
            _same_bits_or_both_nan(got_dx, want_dx, f"Input@GRAD, {threads} threads")
        else:  # dilated: Input@GRAD scatters (plane_input_grad), its terms in another order
            np.testing.assert_allclose(got_dx, want_dx, rtol=1e-5, atol=1e-5)
        _assert_filter_grad(got_dw, want_dw, scale, [0, 1, 3, 4, 5], f"Filter@GRAD, {threads} threads")


def _depthwise_input_grad_reference(g, w, stride, pad, hw):
    """Input@GRAD of a 3x3 depthwise convolution in float64 (each output gradient scattered to its window's
    in-image inputs), and each element's sum of |terms|."""
    n, c, oh, ow = g.shape
    h, wd = hw
    dx, scale = np.zeros((n, c, h, wd)), np.zeros((n, c, h, wd))
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore"):
        for oy in range(oh):
            for ox in range(ow):
                for ky in range(3):
                    for kx in range(3):
                        iy, ix = oy * stride - pad + ky, ox * stride - pad + kx
                        if 0 <= iy < h and 0 <= ix < wd:
                            term = w64[None, :, 0, ky, kx] * g64[:, :, oy, ox]
                            dx[:, :, iy, ix] += term
                            scale[:, :, iy, ix] += np.abs(term)
    return dx, scale


@needs_library
@pytest.mark.parametrize("n, h, w, pad", [(7, 32, 32, 1), (3, 17, 9, 1), (11, 4, 4, 1), (2, 6, 5, 0), (5, 3, 7, 2),
                                          (9, 2, 2, 1), (4, 40, 3, 1), (3, 1, 1, 1), (2, 9, 8, 3)])
def test_depthwise_3x3_stride_2_input_grad_walks_the_phases(n, h, w, pad):
    """Input@GRAD at 3x3 stride 2 (depthwise_conv.c's phased_input_grad: four small convolutions of Output@GRAD,
    one per parity of dx's row and column, each a flat walk over zero-bordered planes, in groups of images with a
    remainder): within float32 rounding of a float64 sum of the convolution's own terms; a channel with an infinite
    tap and one with a NaN tap take the scatter (the zero border must not make NaN there), giving the terms' own
    infinities and NaN. 1-3 threads."""
    x = rng.standard_normal((n, 6, h, w)).astype(np.float32)
    wt = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    wt[0, 0, 0, 0], wt[1, 0, 1, 1] = np.inf, np.nan
    oh, ow = (h + 2 * pad - 3) // 2 + 1, (w + 2 * pad - 3) // 2 + 1
    g = rng.standard_normal((n, 6, oh, ow)).astype(np.float32)
    want, scale = _depthwise_input_grad_reference(g, wt, 2, pad, (h, w))
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            got, _ = native.depthwise_conv2d_grads(x, wt, g, [2, 2], [pad, pad], [1, 1], True, False)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"NaN, {threads} threads")
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=f"inf, {threads} threads")
        finite = np.isfinite(want)
        assert finite[:, 2:].all()
        assert np.all(np.abs(got[finite] - want[finite]) <= 2e-6 * scale[finite] + 1e-30), threads


@needs_library
@pytest.mark.parametrize("n, h, w, pad, strides", [
    (7, 32, 32, 1, (2, 2)), (3, 17, 9, 1, (2, 2)), (11, 4, 4, 1, (2, 2)), (2, 6, 5, 0, (2, 2)), (5, 3, 7, 2, (2, 2)),
    (9, 2, 2, 1, (2, 2)), (4, 40, 3, 1, (2, 2)), (3, 1, 1, 1, (2, 2)), (5, 9, 12, 1, (1, 2)), (6, 11, 6, 1, (2, 1))])
def test_depthwise_3x3_stride_2_filter_grad_walks_the_phases(n, h, w, pad, strides):
    """Filter@GRAD at stride 2 (depthwise_conv.c's stacked_filter_grad: the x planes split by row and column parity,
    each tap a fixed offset into one phase; a stride of 2 along one dim only takes plane_filter_grad's rows): within
    float32 rounding of a float64 sum, groups of images with a remainder; an infinity in x at the map's edge gives
    the convolution's own infinities and NaN. 1-3 threads."""
    x = rng.standard_normal((n, 6, h, w)).astype(np.float32)
    wt = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    oh, ow = (h + 2 * pad - 3) // strides[0] + 1, (w + 2 * pad - 3) // strides[1] + 1
    g = rng.standard_normal((n, 6, oh, ow)).astype(np.float32)
    x[n - 1, 2, h // 2, 0] = np.inf
    want_dw, scale = _depthwise_filter_grad_reference(x, g, pad, strides)  # 3x3
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            _, got_dw = native.depthwise_conv2d_grads(x, wt, g, list(strides), [pad, pad], [1, 1], False, True)
        _assert_filter_grad(got_dw, want_dw, scale, [0, 1, 3, 4, 5], f"{threads} threads")
