"""kernelcore/native, fuzzed: the C kernels (batch_norm.c, depthwise_conv.c, im2col.c, col2im.c, conv_gemm.c, gemm_packed.c,
lstm_step.c) against the NumPy kernels they stand in for, on geometries and shapes hypothesis draws
(tests/test_native.py holds the hand-picked ones), on inputs holding NaN and +-inf, and, in a child process where a
crash is an exit status rather than the end of pytest, thousands of depthwise geometries (and the im2col columns and
the convolutions of each), packed GEMMs and LSTM steps against guard regions around every buffer the kernels read
or write.

The NumPy paths stay the reference: a C result must equal them within float32 rounding (relative to the size of
the terms summed), and hold NaN, +inf and -inf at the same positions, except where zero padding meets an inf or
NaN: the C depthwise kernels sum only the convolution's own terms, the NumPy ones multiply the padding's zeros in
(0 * inf = NaN); the tests below state both results."""
import contextlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from kernelcore import native
from kernelcore.grad import norm as GN
from kernelcore.native import conv as NC
from kernelcore.ops import norm as N
from kernelcore.runtime import fast_paths

pytestmark = pytest.mark.skipif(native.library() is None,
                                reason=f"the C kernels are not loaded: {native.native_state()}")

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
EDGE = settings(FUZZ, max_examples=80)
SPECIALS_WARN = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's 'invalid value' on NaN and inf
SPECIALS = (np.nan, np.inf, -np.inf)


@contextlib.contextmanager
def numpy_path():
    """native.ready says no (and so native.depthwise_ready, which asks it): every op takes its NumPy kernel. Not
    pytest's monkeypatch: a function-scoped fixture is shared by all of a hypothesis test's examples."""
    original = native.ready
    native.ready = lambda *a: False
    try:
        yield
    finally:
        native.ready = original


def assert_matches(got, want, what, rtol=5e-5, scale=None):
    """NaN, +inf and -inf at the same positions; the finite values within rtol of `scale` (default: the largest
    finite |want|, at least 1)."""
    assert got is not None and want is not None, what
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    for name, cls in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        g, w = cls(got), cls(want)
        if not np.array_equal(g, w):
            at = np.argwhere(g != w)[:6]
            raise AssertionError(f"{what}: {name} at other positions, e.g. {at.tolist()}: "
                                 f"C {got[tuple(at.T)].tolist()}, NumPy {want[tuple(at.T)].tolist()}")
    finite = np.isfinite(want)
    if not finite.any():
        return
    if scale is None:
        scale = max(1.0, float(np.abs(want[finite]).max()))
    err = float(np.abs(got[finite] - want[finite]).max())
    assert err <= rtol * scale, f"{what}: max |C - NumPy| = {err:.3g} > {rtol} * {scale:.3g}"


# ---------------------------------------------------------------------------
# depthwise conv2d
# ---------------------------------------------------------------------------
def out_size(i, k, lo, hi, s, d):
    return (i + lo + hi - (d * (k - 1) + 1)) // s + 1


def draw_geometry(draw):
    """((h, w), kernel, strides, pads, dilations, output size) of a 2-D convolution whose output is not empty"""
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    ks = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    strides = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    dils = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    pads = [(draw(st.integers(0, 4)), draw(st.integers(0, 4))), (draw(st.integers(0, 4)), draw(st.integers(0, 4)))]
    outs = [out_size(size, ks[i], *pads[i], strides[i], dils[i]) for i, size in enumerate((h, w))]
    assume(all(v > 0 for v in outs))                  # an empty output: the NumPy path raises, no C kernel runs
    return (h, w), ks, strides, pads, dils, outs


@st.composite
def depthwise_cases(draw):
    n, c = draw(st.integers(1, 3)), draw(st.integers(2, 6))
    hw, ks, strides, pads, dils, outs = draw_geometry(draw)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return (n, c, *hw), ks, strides, pads, dils, outs, seed


def depthwise_inputs(shape, ks, outs, seed):
    rng = np.random.default_rng(seed)
    n, c = shape[:2]
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((c, 1, *ks)).astype(np.float32)
    g = rng.standard_normal((n, c, *outs)).astype(np.float32)
    return x, w, g, rng


def depthwise_forward(x, w, strides, pads, dils):
    c = x.shape[1]
    return (NC.FAST.forward(np, x, w, strides, pads, dils, c),
            NC.forward_in_parts(np, x, w, strides, pads, dils, c))


def depthwise_grads(x, w, g, strides, pads, dils, want_dx, want_dw):
    return NC.grads_in_parts(np, x, w, g, strides, pads, dils, x.shape[1], want_dx, want_dw)


def describe(shape, ks, strides, pads, dils):
    return f"x {list(shape)}, kernel {list(ks)}, strides {strides}, pads {pads}, dilations {dils}"


@given(depthwise_cases())
@FUZZ
def test_depthwise_forward_in_c_equals_numpy(case):
    shape, ks, strides, pads, dils, outs, seed = case
    x, w, _, _ = depthwise_inputs(shape, ks, outs, seed)
    assert native.depthwise_ready(np, x, w, shape[1])
    got = depthwise_forward(x, w, strides, pads, dils)
    with numpy_path():
        want = depthwise_forward(x, w, strides, pads, dils)
    where = describe(shape, ks, strides, pads, dils)
    assert got[0].shape == (shape[0], shape[1], *outs), where
    assert_matches(got[0], want[0], f"conv_forward, {where}")
    assert_matches(got[1], want[1], f"conv_forward_parts, {where}")


@given(depthwise_cases(), st.sampled_from([(True, True), (True, False), (False, True)]))
@FUZZ
def test_depthwise_grads_in_c_equal_numpy(case, wanted):
    shape, ks, strides, pads, dils, outs, seed = case
    x, w, g, _ = depthwise_inputs(shape, ks, outs, seed)
    got = depthwise_grads(x, w, g, strides, pads, dils, *wanted)
    with numpy_path():
        want = depthwise_grads(x, w, g, strides, pads, dils, True, True)
    where = describe(shape, ks, strides, pads, dils)
    for name, flag, a, b in (("Input@GRAD", wanted[0], got[0], want[0]), ("Filter@GRAD", wanted[1], got[1], want[1])):
        if flag:
            assert a.dtype == np.float32
            assert_matches(a, b, f"{name}, {where}")
        else:
            assert a is None, f"{name} made though not wanted"


def put_specials(draw, a, rng, most=3):
    """a copy of `a` with NaN / +inf / -inf at 1..most positions hypothesis draws (a's flat indices)."""
    a = a.copy()
    flat = a.reshape(-1)
    for _ in range(draw(st.integers(1, most))):
        flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from(SPECIALS))
    return a


@SPECIALS_WARN
@given(depthwise_cases(), st.data())
@EDGE
def test_depthwise_non_finite_values_land_where_numpys_do(case, data):
    """Specials in the input (forward, Filter@GRAD) and in Output@GRAD (Input@GRAD; Filter@GRAD without padding:
    with padding the NumPy path multiplies an infinite gradient by the zero padding, see the tests below)."""
    shape, ks, strides, pads, dils, outs, seed = case
    x, w, g, rng = depthwise_inputs(shape, ks, outs, seed)
    where = describe(shape, ks, strides, pads, dils)
    bad_x, bad_g = put_specials(data.draw, x, rng), put_specials(data.draw, g, rng)
    got_y = NC.FAST.forward(np, bad_x, w, strides, pads, dils, shape[1])
    got_dw = depthwise_grads(bad_x, w, g, strides, pads, dils, False, True)[1]
    got_g = depthwise_grads(x, w, bad_g, strides, pads, dils, True, True)
    with numpy_path():
        want_y = NC.FAST.forward(np, bad_x, w, strides, pads, dils, shape[1])
        want_dw = depthwise_grads(bad_x, w, g, strides, pads, dils, False, True)[1]
        want_g = depthwise_grads(x, w, bad_g, strides, pads, dils, True, True)
    assert_matches(got_y, want_y, f"forward, specials in x, {where}")
    assert_matches(got_dw, want_dw, f"Filter@GRAD, specials in x, {where}")
    assert_matches(got_g[0], want_g[0], f"Input@GRAD, specials in Output@GRAD, {where}")
    if not any(lo or hi for lo, hi in pads):
        assert_matches(got_g[1], want_g[1], f"Filter@GRAD, specials in Output@GRAD, {where}")


# Where the zero padding meets an infinite or NaN filter tap (forward, Input@GRAD) or Output@GRAD value
# (Filter@GRAD), the NumPy kernels multiply it by the padding's zeros, 0 * inf = NaN, and that NaN reaches every
# output whose window touches the padding; the C kernels never read the padding (nor, for Input@GRAD at stride 1,
# the zeros the NumPy path extends Output@GRAD by) and sum only the terms the convolution has. Neither is a wrong
# sum of the convolution's own terms: the C result is that sum (what Paddle's GPU depthwise kernels compute, and
# what the NumPy path itself gives for Input@GRAD at strides > 1); the NumPy one is that of an explicitly padded
# input (Paddle's CPU im2col). The outputs with no padding in reach agree.
def assert_c_sums_only_the_convolutions_terms(got, want_c, numpy_gives):
    """The C result is the exact sum of the convolution's own terms; the NumPy path's NaN where padding meets a
    special value is stated beside it, so that a change on either side is seen."""
    np.testing.assert_array_equal(got, want_c)
    assert np.isnan(numpy_gives).any()


@SPECIALS_WARN
@pytest.mark.parametrize("special", [np.inf, np.nan])
def test_depthwise_forward_nan_or_inf_filter_tap_and_padding(special):
    x = np.ones((1, 2, 1, 1), np.float32)
    w = np.ones((2, 1, 1, 2), np.float32)
    w[0, 0, 0, 0] = special                 # the left tap: in the left padding for the one output, x[0, 0, 0, 0]
    args = ([1, 1], [(0, 0), (1, 0)], [1, 1])
    got = NC.FAST.forward(np, x, w, *args, 2)                         # [1, 1]: the right tap only, 1 * 1 = 1
    with numpy_path():
        want = NC.FAST.forward(np, x, w, *args, 2)                    # [nan, 1]: inf * 0 + 1 * 1
    assert_c_sums_only_the_convolutions_terms(got, np.ones((1, 2, 1, 1), np.float32), want)


@SPECIALS_WARN
def test_depthwise_input_grad_inf_filter_tap_at_stride_one():
    x = np.ones((1, 2, 1, 3), np.float32)
    w = np.ones((2, 1, 1, 2), np.float32)
    w[0, 0, 0, 1] = np.inf                  # x[0] is read by tap 0 only (of output 0): tap 1 never reaches it
    g = np.ones((1, 2, 1, 2), np.float32)
    args = ([1, 1], [(0, 0), (0, 0)], [1, 1])
    got = depthwise_grads(x, w, g, *args, True, False)[0]            # dx[0, 0] = [1, inf, inf]
    with numpy_path():                                               # the flipped filter over g zero-extended by
        want = depthwise_grads(x, w, g, *args, True, False)[0]       # one each side: dx[0, 0] = [nan, inf, inf]
    assert_c_sums_only_the_convolutions_terms(
        got, np.array([[[[1, np.inf, np.inf]], [[1, 2, 1]]]], np.float32), want)


@SPECIALS_WARN
def test_depthwise_filter_grad_inf_output_grad_and_padding():
    x = np.ones((1, 2, 1, 1), np.float32)
    w = np.ones((2, 1, 1, 2), np.float32)
    g = np.full((1, 2, 1, 1), np.inf, np.float32)
    args = ([1, 1], [(0, 0), (1, 0)], [1, 1])
    got = depthwise_grads(x, w, g, *args, False, True)[1]            # dw[0] = [0, inf]: tap 0 reads only padding
    with numpy_path():
        want = depthwise_grads(x, w, g, *args, False, True)[1]       # dw[0] = [nan, inf]
    assert_c_sums_only_the_convolutions_terms(
        got, np.array([[[[0, np.inf]]], [[[0, np.inf]]]], np.float32), want)


# ---------------------------------------------------------------------------
# im2col: ordinary and grouped convolutions, forward and gradients
# ---------------------------------------------------------------------------
@st.composite
def conv_cases(draw):
    groups = draw(st.integers(1, 3))
    n, c, o = draw(st.integers(1, 3)), groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 4))
    assume(not (groups == c and c == o and c > 1))  # depthwise: its own kernels, fuzzed above
    hw, ks, strides, pads, dils, outs = draw_geometry(draw)
    return (n, c, *hw), o, groups, ks, strides, pads, dils, outs, draw(st.integers(0, 2 ** 32 - 1))


@given(conv_cases())
@FUZZ
def test_convolution_through_c_columns_equals_numpy(case):
    """conv_forward (one group: conv_gemm.c; groups: the C im2col columns, kernelcore/native/im2col.c) and both
    gradients (the C columns) against the NumPy path's padded input's window view and OpenBLAS."""
    shape, o, groups, ks, strides, pads, dils, outs, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((o, shape[1] // groups, *ks)).astype(np.float32)
    g = rng.standard_normal((shape[0], o, *outs)).astype(np.float32)

    def run():
        return (NC.FAST.forward(np, x, w, strides, pads, dils, groups),
                *NC.grads_in_parts(np, x, w, g, strides, pads, dils, groups, True, True))
    got = run()
    with numpy_path():
        want = run()
    where = describe(shape, ks, strides, pads, dils) + f", {o} outputs, groups {groups}"
    for name, a, b in zip(("out", "dx", "dw"), got, want):
        assert_matches(a, b, f"{name}, {where}")


# ---------------------------------------------------------------------------
# batch_norm
# ---------------------------------------------------------------------------
class Ctx:
    xp = np
    training = True
    want_dx = True

    @classmethod
    def output_names(cls, slot):
        return [slot] if (cls.want_dx or slot != "X@GRAD") else []


def bn_attrs(mode):
    """mode: "batch" (training, batch statistics), "inference" (is_test: the running ones), "global"
    (use_global_stats while training)."""
    return dict(data_layout="NCHW", is_test=mode == "inference", use_global_stats=mode == "global",
                trainable_statistics=False, epsilon=1e-5, momentum=0.9)


@st.composite
def bn_cases(draw):
    ndim = draw(st.integers(3, 5))
    shape = tuple(draw(st.integers(1, 5 if i < 2 else 4)) for i in range(ndim))
    return shape, draw(st.integers(0, 2 ** 32 - 1))


def bn_inputs(shape, seed):
    rng = np.random.default_rng(seed)
    c = shape[1]
    offset, spread = rng.choice([0.0, 3.0, -20.0]), rng.choice([1.0, 0.1, 5.0])
    x = (offset + spread * rng.standard_normal(shape)).astype(np.float32)
    return (x, rng.uniform(0.5, 1.5, c).astype(np.float32), rng.standard_normal(c).astype(np.float32),
            (offset + rng.standard_normal(c)).astype(np.float32),
            (spread ** 2 * rng.uniform(0.5, 2.0, c)).astype(np.float32), rng)


def saved_stats(x):
    axes = tuple(i for i in range(x.ndim) if i != 1)
    xd = x.astype(np.float64)
    return xd.mean(axis=axes).astype(np.float32), (1 / np.sqrt(xd.var(axis=axes) + 1e-5)).astype(np.float32)


def run_bn(ins, mode):
    return fast_paths.choose("batch_norm", "cpu", "float32", N.batch_norm)(Ctx, ins, bn_attrs(mode))


def run_bn_grad(x, scale, bias, mean, var, g, mode, want_dx):
    smean, sinv = saved_stats(np.where(np.isfinite(x), x, 0).astype(np.float32))
    Ctx.want_dx = want_dx
    try:
        kernel = fast_paths.choose("batch_norm_grad", "cpu", "float32", GN.batch_norm_grad)
        return kernel(Ctx, (x, scale, bias, smean, sinv, mean, var, None, g), bn_attrs(mode))
    finally:
        Ctx.want_dx = True


def bn_grad_scales(x, scale, mean, var, g, mode):
    """Per output, the size of the terms its sums add (what float32 rounding is relative to): sums of |terms|."""
    axes = tuple(i for i in range(x.ndim) if i != 1)
    shape = [1] * x.ndim
    shape[1] = -1
    xd, gd = x.astype(np.float64), np.abs(g.astype(np.float64))
    if mode == "global":
        m, inv = mean.astype(np.float64), 1 / np.sqrt(var.astype(np.float64) + 1e-5)
    else:
        m, inv = xd.mean(axis=axes), 1 / np.sqrt(xd.var(axis=axes) + 1e-5)
    xhat = np.abs((xd - m.reshape(shape)) * inv.reshape(shape))
    count = x.size // x.shape[1]
    dbias = gd.sum(axis=axes)
    dscale = (gd * xhat).sum(axis=axes)
    k = np.abs(scale.astype(np.float64)) * inv
    dx = k.reshape(shape) * (gd + (dbias / count).reshape(shape) + xhat * (dscale / count).reshape(shape))
    return [max(1.0, float(v.max())) for v in (dx, dscale, dbias)]


@given(bn_cases(), st.sampled_from(["batch", "inference", "global"]))
@FUZZ
def test_batch_norm_in_c_equals_numpy(case, mode):
    shape, seed = case
    x, scale, bias, mean, var, _ = bn_inputs(shape, seed)
    ins = (x, scale, bias, mean, var, None)
    assert native.ready(np, x)
    got = run_bn(ins, mode)
    with numpy_path():
        want = run_bn(ins, mode)
    for name, a, b in zip(("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"), got, want):
        assert a.dtype == b.dtype, name
        assert_matches(a, b, f"{name}, x {list(shape)}, {mode}")


@given(bn_cases(), st.sampled_from(["batch", "global"]), st.booleans())
@FUZZ
def test_batch_norm_grad_in_c_equals_numpy(case, mode, want_dx):
    shape, seed = case
    x, scale, bias, mean, var, rng = bn_inputs(shape, seed)
    g = rng.standard_normal(shape).astype(np.float32)
    got = run_bn_grad(x, scale, bias, mean, var, g, mode, want_dx)
    with numpy_path():
        want = run_bn_grad(x, scale, bias, mean, var, g, mode, want_dx)
    assert (got[0] is None) == (not want_dx) == (want[0] is None)
    scales = bn_grad_scales(x, scale, mean, var, g, mode)
    for name, a, b, s in zip(("X@GRAD", "Scale@GRAD", "Bias@GRAD"), got, want, scales):
        if b is not None:
            assert_matches(a, b, f"{name}, x {list(shape)}, {mode}, X@GRAD wanted: {want_dx}", scale=s)


@SPECIALS_WARN
@given(bn_cases(), st.sampled_from(["batch", "inference", "global"]), st.data())
@EDGE
def test_batch_norm_non_finite_values_land_where_numpys_do(case, mode, data):
    """Specials in X (forward, every mode; the gradient with batch statistics) and in Y@GRAD (the gradient, both
    modes). The gradient with global statistics and specials in X: the test after this one."""
    shape, seed = case
    x, scale, bias, mean, var, rng = bn_inputs(shape, seed)
    g = rng.standard_normal(shape).astype(np.float32)
    bad_x, bad_g = put_specials(data.draw, x, rng), put_specials(data.draw, g, rng)
    grad_mode = "batch" if mode == "inference" else mode
    got = run_bn((bad_x, scale, bias, mean, var, None), mode)
    got_gx = run_bn_grad(bad_x, scale, bias, mean, var, g, "batch", True)
    got_gg = run_bn_grad(x, scale, bias, mean, var, bad_g, grad_mode, True)
    with numpy_path():
        want = run_bn((bad_x, scale, bias, mean, var, None), mode)
        want_gx = run_bn_grad(bad_x, scale, bias, mean, var, g, "batch", True)
        want_gg = run_bn_grad(x, scale, bias, mean, var, bad_g, grad_mode, True)
    where = f"x {list(shape)}, {mode}"
    for name, a, b in zip(("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"), got, want):
        assert_matches(a, b, f"{name}, specials in X, {where}")
    for name, a, b in zip(("X@GRAD", "Scale@GRAD", "Bias@GRAD"), got_gx, want_gx):
        assert_matches(a, b, f"{name}, specials in X, batch statistics, {where}", rtol=2e-4)
    for name, a, b in zip(("X@GRAD", "Scale@GRAD", "Bias@GRAD"), got_gg, want_gg):
        assert_matches(a, b, f"{name}, specials in Y@GRAD, {grad_mode} statistics, {where}", rtol=2e-4)


@SPECIALS_WARN
@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_batch_norm_grad_with_global_statistics_does_not_read_x(special):
    """With use_global_stats (or in inference) mean and variance are constants: X@GRAD = Scale / sqrt(Var + eps)
    * Y@GRAD, whatever X holds (Paddle's kernel: d_x = scale * inv_var * d_y). The C kernel once folded both modes
    into one expression whose batch-statistics term it zeroed by multiplying (x - mean) by 0, and inf * 0 = NaN."""
    x = np.zeros((1, 1, 2), np.float32)
    x[0, 0, 0] = special
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    g = np.ones((1, 1, 2), np.float32)
    got = run_bn_grad(x, one, zero, zero, one, g, "global", True)[0]
    with numpy_path():
        want = run_bn_grad(x, one, zero, zero, one, g, "global", True)[0]  # NumPy: [[[1.0, 1.0]]] (1 / sqrt(1 + 1e-5))
    assert_matches(got, want, "X@GRAD, global statistics")


# ---------------------------------------------------------------------------
# memory safety, in a child process
# ---------------------------------------------------------------------------
CHILD = textwrap.dedent(r"""
    import ctypes, faulthandler, sys
    import numpy as np
    from kernelcore import native
    faulthandler.enable()
    lib = native.library()
    assert lib is not None
    GUARD = 4096
    SENTINEL = np.uint32(0x7FC0DEAD)        # a NaN with a payload: a guard word the kernels must never write

    def guarded(shape, data=None):
        # a C-contiguous array in the middle of a larger buffer: NaN guards around an input (a read outside it
        # makes a NaN result), sentinel words around an output (and in it: a word it leaves unwritten stays NaN)
        size = int(np.prod(shape))
        buf = np.empty(size + 2 * GUARD, np.float32)
        if data is None:
            buf.view(np.uint32)[:] = SENTINEL
        else:
            buf[:] = np.nan
        arr = buf[GUARD:GUARD + size].reshape(shape)
        if data is not None:
            arr[...] = data
        return buf, arr

    def guards_intact(buf):
        words = buf.view(np.uint32)
        return bool((words[:GUARD] == SENTINEL).all() and (words[-GUARD:] == SENTINEL).all())

    def geometry(rng, kind):
        while True:
            if kind == "wide":
                h, w = rng.integers(1, 41, 2)
                kh, kw = rng.integers(1, 33, 2)
                if kh * kw > native.DEPTHWISE_MAX_TAPS:
                    continue
                s, d, p = rng.integers(1, 6, 2), rng.integers(1, 5, 2), rng.integers(0, 11, 4)
            elif kind == "stacked":  # depthwise_conv.c's flat walks: up to 48x48 maps, so planes go in groups
                h, w = rng.integers(1, 49, 2)
                if rng.random() < 0.5:  # 3x3: its own loops, at strides 1 and 2
                    kh = kw = 3
                    s, d = rng.integers(1, 3, 2), np.ones(2, np.int64)
                else:                   # any other kernel at stride 1, dilated or not
                    kh, kw = rng.integers(1, 8, 2)
                    s, d = np.ones(2, np.int64), rng.integers(1, 3, 2)
                p = rng.integers(0, 4, 4)
            else:
                h, w = rng.integers(1, 13, 2)
                kh, kw = rng.integers(1, 6, 2)
                s, d, p = rng.integers(1, 4, 2), rng.integers(1, 4, 2), rng.integers(0, 5, 4)
            oh = (h + p[0] + p[1] - (d[0] * (kh - 1) + 1)) // s[0] + 1
            ow = (w + p[2] + p[3] - (d[1] * (kw - 1) + 1)) // s[1] + 1
            if oh > 0 and ow > 0:
                n, c = int(rng.integers(1, 9 if kind == "stacked" else 4)), int(rng.integers(2, 7))
                return (n, c, int(h), int(w)), (int(kh), int(kw)), [int(v) for v in s], [int(p[0]), int(p[2])], \
                    [int(v) for v in d], (int(oh), int(ow))

    def pads_of(shape, ks, strides, before, dils, outs):
        # (before, after) per dim: after is what the output size needs beyond the input and the padding before
        return [(before[i], max(0, (outs[i] - 1) * strides[i] + dils[i] * (ks[i] - 1) + 1 - shape[2 + i] - before[i]))
                for i in range(2)]

    rng = np.random.default_rng(int(sys.argv[1]))
    count = int(sys.argv[2])
    P = ctypes.c_void_p
    for i in range(count):
        shape, ks, strides, before, dils, outs = geometry(rng, {7: "wide", 3: "stacked"}.get(i % 8, "small"))
        n, c = shape[:2]
        what = f"#{i}: x {list(shape)}, kernel {list(ks)}, strides {strides}, pads before {before}, dils {dils}"
        _, x = guarded(shape, rng.standard_normal(shape))
        _, w = guarded((c, 1, *ks), rng.standard_normal((c, 1, *ks)))
        _, g = guarded((n, c, *outs), rng.standard_normal((n, c, *outs)))
        # the wrappers, as the ops call them (their own output arrays; NaN guards catch reads outside x, w, g)
        y = native.depthwise_conv2d(x, w, strides, before, dils, outs)
        assert y.shape == (n, c, *outs) and np.isfinite(y).all(), what
        want = [(True, True), (True, False), (False, True)][i % 3]
        dx, dw = native.depthwise_conv2d_grads(x, w, g, strides, before, dils, *want)
        assert (dx is None) != want[0] and (dw is None) != want[1], what
        assert dx is None or (dx.shape == x.shape and np.isfinite(dx).all()), what
        assert dw is None or (dw.shape == w.shape and np.isfinite(dw).all()), what
        # the library's entry points on guarded outputs too, at 1 to 4 threads: no write outside them, none missed
        dims = np.array([*shape[2:], *outs, *ks, *strides, *before, *dils], np.int64)
        threads = int(rng.integers(1, 5))
        ybuf, y2 = guarded((n, c, *outs))
        lib.kc_depthwise_conv2d_f32(x.ctypes.data, w.ctypes.data, y2.ctypes.data, n, c, dims.ctypes.data, threads)
        dxbuf, dx2 = guarded(shape)
        dwbuf, dw2 = guarded((c, 1, *ks))
        _, flipped = guarded((c, int(np.prod(ks))), w.reshape(c, -1)[:, ::-1])
        lib.kc_depthwise_conv2d_grad_f32(x.ctypes.data, w.ctypes.data, flipped.ctypes.data, g.ctypes.data,
                                         dx2.ctypes.data, dw2.ctypes.data, n, c, dims.ctypes.data, threads)
        # im2col (any convolution's columns) of the same geometry, against the padded input's window view
        after = [int(p[1]) for p in pads_of(shape, ks, strides, before, dils, outs)]
        xpad = np.pad(x, [(0, 0), (0, 0), (before[0], after[0]), (before[1], after[1])])
        es = xpad.strides
        want_cols = np.lib.stride_tricks.as_strided(
            xpad, shape=(c, *ks, n, *outs),
            strides=(es[1], es[2] * dils[0], es[3] * dils[1], es[0], es[2] * strides[0], es[3] * strides[1]))
        want_cols = want_cols.reshape(c * ks[0] * ks[1], -1)
        cols = native.im2col(x, ks, strides, before, dils, outs)
        colbuf, cols2 = guarded(want_cols.shape)
        lib.kc_im2col_f32(x.ctypes.data, cols2.ctypes.data, n, c, dims.ctypes.data, threads)
        for name, buf, arr, ref in (("out", ybuf, y2, y), ("dx", dxbuf, dx2, dx), ("dw", dwbuf, dw2, dw),
                                    ("cols", colbuf, cols2, want_cols)):
            assert guards_intact(buf), f"{what}: a write outside {name}"
            assert np.isfinite(arr).all(), f"{what}: {name} not all written, or read outside its inputs"
            assert ref is None or np.array_equal(arr, ref), f"{what}: {name} at {threads} threads differs"
        assert np.array_equal(cols, want_cols), f"{what}: native.im2col differs from the window view"
        # col2im (im2col's adjoint) of the same geometry, guarded: <im2col(x), cols> = <x, col2im(cols)>
        _, cin = guarded(want_cols.shape, rng.standard_normal(want_cols.shape))
        xbuf, xo = guarded(shape)
        lib.kc_col2im_f32(cin.ctypes.data, xo.ctypes.data, n, c, dims.ctypes.data, threads)
        assert guards_intact(xbuf), f"{what}: col2im wrote outside x"
        assert np.isfinite(xo).all(), f"{what}: col2im left x unwritten, or read outside its columns"
        lhs, rhs = float((want_cols.astype(np.float64) * cin).sum()), float((x.astype(np.float64) * xo).sum())
        assert abs(lhs - rhs) <= 1e-4 * float(np.abs(want_cols).sum() + 1), f"{what}: col2im is not im2col's adjoint"
        # the convolution of the same geometry through conv_gemm.c (columns packed into its panels, NCHW output),
        # and a 1x1 one of stride 1 on the same input (panels read in place), every buffer guarded
        m_out = int(rng.integers(1, 80))
        for fdims, kshape, ref_cols, o_hw in (
                (dims, ks, want_cols, outs),
                (np.array([*shape[2:], *shape[2:], 1, 1, 1, 1, 0, 0, 1, 1], np.int64), (1, 1),
                 x.reshape(n, c, -1).transpose(1, 0, 2).reshape(c, -1), tuple(shape[2:]))):
            cols_n = n * o_hw[0] * o_hw[1]
            _, wf = guarded((m_out, c, *kshape), rng.standard_normal((m_out, c, *kshape)))
            sbuf, scratch = guarded((((cols_n + 31) // 32) * 32 * c * kshape[0] * kshape[1],))
            obuf, out = guarded((n, m_out, *o_hw))
            lib.kc_conv2d_f32(x.ctypes.data, wf.ctypes.data, scratch.ctypes.data, out.ctypes.data, n, c, m_out,
                              fdims.ctypes.data, threads)
            conv_what = f"{what}: conv2d, {m_out} filters of {list(kshape)}"
            assert guards_intact(sbuf), f"{conv_what}: a write outside the scratch"
            assert guards_intact(obuf), f"{conv_what}: a write outside out"
            assert np.isfinite(out).all(), f"{conv_what}: out not all written, or read outside its inputs"
            want_out = (wf.reshape(m_out, -1).astype(np.float64) @ ref_cols).reshape(m_out, n, -1)
            want_out = want_out.transpose(1, 0, 2).reshape(out.shape)
            k_all = c * kshape[0] * kshape[1]
            assert np.allclose(out, want_out, rtol=1e-4, atol=1e-4 * np.sqrt(k_all)), conv_what
        # the packed GEMM for RNN steps, on guarded operands of odd sizes
        m, k, n = (int(v) for v in rng.integers(1, 70, 3))
        _, a = guarded((m, k), rng.standard_normal((m, k)))
        _, b = guarded((k, n), rng.standard_normal((k, n)))
        pbuf, packed = guarded((((n + 31) // 32) * 32 * k,))
        lib.kc_pack_columns_f32(b.ctypes.data, n, 1, packed.ctypes.data, k, n)
        cbuf, c2 = guarded((m, n))
        lib.kc_gemm_packed_f32(a.ctypes.data, k, 1, packed.ctypes.data, None, 0, c2.ctypes.data, m, k, n, threads)
        for name, buf, arr in (("packed", pbuf, packed), ("gemm", cbuf, c2)):
            assert guards_intact(buf), f"#{i}: gemm {m}x{k}x{n}: a write outside {name}"
            assert np.isfinite(arr).all(), f"#{i}: gemm {m}x{k}x{n}: {name} not all written, or read outside"
        assert np.allclose(c2, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k)), f"#{i}: gemm {m}x{k}x{n}"
        # the LSTM step (lstm_step.c) on the same kind of operands: its gate-grouped weight, guarded outputs
        hid = max(1, n // 4)
        wbuf, wpk = guarded((4 * ((hid + 31) // 32) * 32 * k,))
        _, w4 = guarded((k, 4 * hid), rng.standard_normal((k, 4 * hid)))
        for g in range(4):
            lib.kc_pack_columns_f32(w4.ctypes.data + 4 * g * hid, 4 * hid, 1,
                                    wpk.ctypes.data + 4 * g * ((hid + 31) // 32) * 32 * k, k, hid)
        _, xg = guarded((m, 4 * hid), rng.standard_normal((m, 4 * hid)))
        _, cp = guarded((m, hid), rng.standard_normal((m, hid)))
        gbuf, gates = guarded((m, 4 * hid))
        cbuf2, c3 = guarded((m, hid))
        hbuf, h3 = guarded((m, hid))
        lib.kc_lstm_step_f32(a.ctypes.data, k, 1, wpk.ctypes.data, xg.ctypes.data, cp.ctypes.data, gates.ctypes.data,
                             c3.ctypes.data, h3.ctypes.data, m, k, hid, threads)
        what = f"#{i}: lstm step rows {m}, k {k}, hidden {hid}"
        for name, buf, arr in (("packed", wbuf, wpk), ("gates", gbuf, gates), ("c", cbuf2, c3), ("h", hbuf, h3)):
            assert guards_intact(buf), f"{what}: a write outside {name}"
            assert np.isfinite(arr).all(), f"{what}: {name} not all written, or read outside its inputs"
        pre = xg + a.astype(np.float64) @ w4
        sig = 1 / (1 + np.exp(-pre))
        assert np.allclose(gates[:, :hid], sig[:, :hid], rtol=1e-4, atol=1e-4 * np.sqrt(k)), what
        assert np.allclose(c3, sig[:, hid:2 * hid] * cp + sig[:, :hid] * np.tanh(pre[:, 2 * hid:3 * hid]),
                           rtol=1e-4, atol=1e-4 * np.sqrt(k)), what
        # a whole pass of such steps in one call (k = hidden), forward or reverse, every buffer guarded, against the
        # steps called one by one (the same operations: the same bits); one case in 32 large enough for the steps
        # to share their hidden slices over the threads (a thread per 2M multiply-adds)
        steps, reverse = int(rng.integers(1, 5)), int(rng.integers(0, 2))
        sm, sh = (int(rng.integers(48, 65)), int(rng.integers(160, 201))) if i % 32 == 0 else (m, hid)
        sq_buf, wsq = guarded((4 * ((sh + 31) // 32) * 32 * sh,))
        _, w_sq = guarded((sh, 4 * sh), rng.standard_normal((sh, 4 * sh)) * 0.3)
        for g in range(4):
            lib.kc_pack_columns_f32(w_sq.ctypes.data + 4 * g * sh, 4 * sh, 1,
                                    wsq.ctypes.data + 4 * g * ((sh + 31) // 32) * 32 * sh, sh, sh)
        _, xs = guarded((steps, sm, 4 * sh), rng.standard_normal((steps, sm, 4 * sh)))
        _, h0 = guarded((sm, sh), rng.standard_normal((sm, sh)))
        _, c0 = guarded((sm, sh), rng.standard_normal((sm, sh)))
        obuf2, outs = guarded((steps, sm, sh))
        lbuf, c_last = guarded((sm, sh))
        sbuf2, c_spare = guarded((sm, sh))
        inputs_before = [v.copy() for v in (xs, h0, c0, wsq)]
        lib.kc_lstm_sequence_f32(xs.ctypes.data, h0.ctypes.data, c0.ctypes.data, wsq.ctypes.data, outs.ctypes.data,
                                 c_last.ctypes.data, c_spare.ctypes.data, steps, reverse, sm, sh, threads)
        seq_what = f"#{i}: a pass of {steps} steps{' reversed' if reverse else ''}, rows {sm}, hidden {sh}"
        assert all(np.array_equal(v, b, equal_nan=True) for v, b in zip((xs, h0, c0, wsq), inputs_before)), \
            f"{seq_what}: an input was written"
        for name, buf in (("packed", sq_buf), ("out", obuf2), ("c_last", lbuf), ("c_spare", sbuf2)):
            assert guards_intact(buf), f"{seq_what}: a write outside {name}"
        h_at, c_at = h0, c0
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            g1, c1, h1 = (np.empty((sm, w), np.float32) for w in (4 * sh, sh, sh))
            lib.kc_lstm_step_f32(h_at.ctypes.data, sh, 1, wsq.ctypes.data, xs[t].ctypes.data, c_at.ctypes.data,
                                 g1.ctypes.data, c1.ctypes.data, h1.ctypes.data, sm, sh, sh, threads)
            assert np.array_equal(outs[t], h1), f"{seq_what}: h of step {t} differs from the step's"
            h_at, c_at = h1, c1
        assert np.array_equal(c_last, c_at), f"{seq_what}: the last c differs from the steps'"
        # and its backward, from that step's values, its dh_prev through W_hh packed as gemm_packed's (k = hidden)
        _, wb = guarded((4 * hid, hid), rng.standard_normal((4 * hid, hid)))
        bbuf, wbp = guarded((((hid + 31) // 32) * 32 * 4 * hid,))
        lib.kc_pack_columns_f32(wb.ctypes.data, hid, 1, wbp.ctypes.data, 4 * hid, hid)
        _, dh = guarded((m, hid), rng.standard_normal((m, hid)))
        _, dc = guarded((m, hid), rng.standard_normal((m, hid)))
        dbuf, d_pre = guarded((m, 4 * hid))
        pbuf2, dcp = guarded((m, hid))
        hbuf2, dhp = guarded((m, hid))
        lib.kc_lstm_step_grad_f32(gates.ctypes.data, c3.ctypes.data, cp.ctypes.data, dh.ctypes.data, dc.ctypes.data,
                                  d_pre.ctypes.data, dcp.ctypes.data, wbp.ctypes.data, dhp.ctypes.data, m, hid,
                                  threads)
        for name, buf, arr in (("packed W_hh", bbuf, wbp), ("d_pre", dbuf, d_pre), ("dc_prev", pbuf2, dcp),
                               ("dh_prev", hbuf2, dhp)):
            assert guards_intact(buf), f"{what}: backward: a write outside {name}"
            assert np.isfinite(arr).all(), f"{what}: backward: {name} not all written, or read outside its inputs"
        assert np.allclose(dhp, d_pre.astype(np.float64) @ wb, rtol=1e-4, atol=1e-4 * np.sqrt(4 * hid)), what
        # elementwise_add with y repeating along x's middle dims (add_rows.c), up to ~72k elements: past the 32k
        # a thread's share starts at (kc_threads_for), so shares also begin and end inside rows
        outer, mid, inner = int(rng.integers(1, 7)), int(rng.integers(1, 81)), int(rng.integers(1, 151))
        _, xa = guarded((outer, mid, inner), rng.standard_normal((outer, mid, inner)))
        _, ya = guarded((outer, 1, inner), rng.standard_normal((outer, 1, inner)))
        abuf, za = guarded((outer, mid, inner))
        lib.kc_add_rows_f32(xa.ctypes.data, ya.ctypes.data, za.ctypes.data, outer, mid, inner, threads)
        add_what = f"#{i}: add rows [{outer}, {mid}, {inner}]"
        assert guards_intact(abuf), f"{add_what}: a write outside out"
        assert np.array_equal(za, xa + ya), f"{add_what}: not NumPy's sums (or read outside its inputs)"
    print("ok", count)
""")


def test_depthwise_kernels_stay_inside_their_buffers_over_thousands_of_geometries():
    """3000 geometries (one in eight wider: maps to 40x40, kernels to 32x32 within DEPTHWISE_MAX_TAPS, strides to
    5, dilations to 4, pads to 10) straight into native.depthwise_conv2d / depthwise_conv2d_grads / im2col and the
    library's entry points, the convolution of each geometry and a 1x1 one (kc_conv2d_f32, 1-79 filters), and 3000
    packed GEMMs and LSTM steps of odd sizes, every buffer between guard regions, in a child process: a crash is
    its exit status."""
    env = {**os.environ}
    env.pop(native.ENV, None)
    proc = subprocess.run([sys.executable, "-c", CHILD, "20240611", "3000"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.split() == ["ok", "3000"], proc.stdout
