"""The faster kernel paths against the plain formulas they replace (kernelcore/ops/conv.py, ops/rnn.py,
grad/conv.py, grad/pool.py): each path is checked where its shape selects it, on NumPy, against a reference written
the obvious way. The finite-difference cases (tests/vision_grad_cases.py) and the Paddle parity tests check the ops
end to end; these pin the individual branches, including dtypes the program tests do not reach."""
import math

import numpy as np
import pytest

from kernelcore.grad import norm as GN
from kernelcore.grad import conv as V
from kernelcore.grad import pool as GP
from kernelcore.ops import conv as C
from kernelcore.ops import norm as N
from kernelcore.ops import pool as P
from kernelcore.ops import rnn as R

rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


class _Ctx:
    """What the batch_norm_grad kernel reads of its context: the array module, training, wanted outputs."""
    xp = np
    training = True

    @staticmethod
    def output_names(slot):
        return [slot]


def _bn_grad_reference(x, g, scale, mean, inv):
    """X@GRAD, Scale@GRAD, Bias@GRAD of training-mode batch norm (NCHW), in float64 from the textbook form."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    red = (0, 2, 3)
    m, iv, sc = (v.astype(np.float64).reshape(1, -1, 1, 1) for v in (mean, inv, scale))
    xhat = (x - m) * iv
    dxhat = g * sc
    dx = iv * (dxhat - dxhat.mean(axis=red, keepdims=True) - xhat * (dxhat * xhat).mean(axis=red, keepdims=True))
    return dx, (g * xhat).sum(axis=red), g.sum(axis=red)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float16, 1e-2)])
def test_batch_norm_grad_matches_the_textbook_form(dtype, tol):
    """131,072 elements per channel: more than float16 can count, so the per-channel factors must not be float16.
    The gradient has a mean and a part along xhat, which the closed form removes: a kernel that dropped either
    term would be off by more than the result itself."""
    x = f32(128, 3, 32, 32)
    g = 0.5 * x + 1 + 0.3 * f32(128, 3, 32, 32)
    scale = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    mean = x.mean(axis=(0, 2, 3))
    inv = (1 / np.sqrt(x.var(axis=(0, 2, 3)) + 1e-5)).astype(np.float32)
    attrs = dict(data_layout="NCHW", is_test=False, use_global_stats=False, trainable_statistics=False,
                 epsilon=1e-5)
    dx, dscale, dbias = GN.batch_norm_grad(_Ctx, (x.astype(dtype), scale, scale, mean, inv, mean, mean, None,
                                                 g.astype(dtype)), attrs)
    want = _bn_grad_reference(x.astype(dtype), g.astype(dtype), scale, mean, inv)
    assert dx.dtype == dtype
    for got, ref, name in zip((dx, dscale, dbias), want, ("X@GRAD", "Scale@GRAD", "Bias@GRAD")):
        err = float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())
        assert err < tol, f"{name}: max|diff| / max|ref| = {err:.1e} in {np.dtype(dtype).name}"


@pytest.mark.parametrize("shape, axis", [
    ((8, 960, 2, 2), 1),     # short per-(sample, channel) rows: einsum
    ((4, 6, 16, 16), 1),     # long rows: batched products
    ((3, 5, 2, 3, 4), 1),    # 5-D channels first
    ((6, 7), 1),             # [N, C]
    ((4, 3, 5), 2),          # channels last (NLC)
    ((2, 4, 4, 6), 3),       # NHWC
])
def test_per_channel_sums_and_factors_equal_numpys_reductions(shape, axis):
    """batch_norm's per-channel sums (GEMV with ones), dot products (einsum or batched products by row length)
    and per-channel factors (repeated blocks channels first) against reductions and broadcasts written plainly."""
    a, b = f32(*shape), f32(*shape)
    c = shape[axis]
    red = tuple(i for i in range(len(shape)) if i != axis)
    np.testing.assert_allclose(N.channel_sum(np, a, axis), a.astype(np.float64).sum(axis=red), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(N.channel_dot(np, a, b, axis), (a.astype(np.float64) * b).sum(axis=red),
                               rtol=1e-5, atol=1e-4)
    v = f32(c)
    plain = [1] * len(shape)
    plain[axis] = c
    assert np.array_equal(a * N.per_channel(np, v, shape, axis), a * v.reshape(plain))


def test_lstm_cell_in_place_gates_are_the_plain_formula(monkeypatch):
    """cell_forward builds the gates in the recurrent GEMM's buffer: the values are the plain formula's, bit for
    bit, laid out i, f, g, o, and the inputs are left as they were. (NumPy's GEMM here, so that the product is
    NumPy's bit for bit; the C GEMM for RNN steps: tests/test_native.py.)"""
    from kernelcore import native
    monkeypatch.setattr(native, "gemm_ready", lambda *a: False)
    B, H = 5, 7
    x_proj, h_prev, c_prev, w_hh = f32(B, 4 * H), f32(B, H), f32(B, H), f32(4 * H, H)
    before = [a.copy() for a in (x_proj, h_prev, c_prev, w_hh)]
    w_hh_t = R.recurrent_weight(np, w_hh)
    np.testing.assert_array_equal(w_hh_t, w_hh.T)
    gates, h, c = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, w_hh_t, None)
    pre = x_proj + h_prev @ w_hh_t
    sig = (np.tanh(pre * np.float32(0.5)) + np.float32(1)) * np.float32(0.5)
    cand = np.tanh(pre[:, 2 * H:3 * H])
    want_c = sig[:, H:2 * H] * c_prev + sig[:, :H] * cand
    want = np.concatenate([sig[:, :H], sig[:, H:2 * H], cand, sig[:, 3 * H:]], axis=1)
    np.testing.assert_array_equal(gates, want)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(h, sig[:, 3 * H:] * np.tanh(want_c))
    for a, b in zip((x_proj, h_prev, c_prev, w_hh), before):
        np.testing.assert_array_equal(a, b)


def test_lstm_cell_writes_h_into_the_given_row():
    """With h_out (the rnn op's Out[t]) the step's h is that array, with the values of a fresh one."""
    B, H = 3, 4
    x_proj, h_prev, c_prev, w_hh = f32(B, 4 * H), f32(B, H), f32(B, H), f32(4 * H, H)
    w_hh_t = R.recurrent_weight(np, w_hh)
    _, h_fresh, _ = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, w_hh_t, None)
    row = np.full((B, H), np.nan, np.float32)
    _, h, _ = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, w_hh_t, None, h_out=row)
    assert h is row
    np.testing.assert_array_equal(row, h_fresh)


def test_lstm_cell_backward_is_the_plain_formula():
    """_lstm_cell_backward's passes over all four gates at once give the chain rule written out per gate, and
    leave the step's kept values and the incoming gradients as they were."""
    from kernelcore.grad import rnn as GR
    from kernelcore.runtime.scope import Scope
    B, H = 5, 7
    x_proj, h_prev, c_prev, w_hh = f32(B, 4 * H), f32(B, H), f32(B, H), f32(4 * H, H)
    gates, h, c = R.cell_forward(np, "LSTM", x_proj, h_prev, c_prev, R.recurrent_weight(np, w_hh), None)
    s = Scope()
    for name, v in (("gates", gates), ("c", c), ("c_prev", c_prev), ("h_prev", h_prev)):
        s.var(name).value = v
    dh, dc = f32(B, H), f32(B, H)
    before = [a.copy() for a in (gates, c, c_prev, dh, dc)]
    d_pre = np.empty((B, 4 * H), np.float32)
    cand_cols = GR.lstm_candidate_columns(np, np.dtype(np.float32), H)
    dh_prev, dc_prev = GR._lstm_cell_backward(np, s, dh, dc, w_hh, cand_cols, d_pre, np.empty((B, 4 * H), np.float32))
    i, f, g, o = (gates[:, k * H:(k + 1) * H].astype(np.float64) for k in range(4))
    tc = np.tanh(c.astype(np.float64))
    dc_all = dc + dh * o * (1 - tc * tc)
    want = np.concatenate([dc_all * g * i * (1 - i), dc_all * c_prev * f * (1 - f), dc_all * i * (1 - g * g),
                           dh * tc * o * (1 - o)], axis=1)
    np.testing.assert_allclose(d_pre, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dh_prev, want @ w_hh, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dc_prev, dc_all * f, rtol=1e-5, atol=1e-6)
    for a, b in zip((gates, c, c_prev, dh, dc), before):
        np.testing.assert_array_equal(a, b)


def _transpose_reference(g, w, strides, pads, dils, groups, in_sizes):
    return C.conv_transpose_forward(np, g, w, strides, pads, dils, groups, in_sizes)


@pytest.mark.parametrize("xshape, wshape, strides, pads, dils, groups", [
    ((2, 4, 9, 8), (6, 2, 3, 3), [1, 1], [(1, 1), (0, 2)], [1, 2], 2),        # flipped-filter convolution
    ((2, 3, 10, 9), (6, 1, 3, 3), [1, 1], [(2, 1), (1, 1)], [2, 1], 3),       # depthwise, multiplier 2, stride 1
    ((2, 5, 11, 10), (5, 1, 3, 3), [2, 2], [(1, 1), (1, 1)], [1, 1], 5),      # depthwise, stride 2
    ((1, 4, 9, 7), (8, 2, 3, 2), [2, 1], [(0, 1), (1, 0)], [1, 1], 2),        # depthwise-like but grouped: col2im
    ((1, 8, 2, 2), (16, 8, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], 1),       # large filter beside the gradient
    ((2, 6, 5, 3), (8, 6, 3, 3), [2, 2], [(1, 1), (1, 1)], [1, 1], 1),        # col2im, channels-last
    ((2, 6, 6, 4), (4, 3, 3, 2), [2, 2], [(1, 0), (0, 1)], [1, 2], 2),        # col2im, channels-last, groups
    ((1, 3, 6, 6), (3, 3, 2, 2), [1, 1], [(2, 2), (0, 0)], [1, 1], 1),        # pad beyond the kernel's reach
])
def test_conv_input_grad_equals_the_transposed_convolution(xshape, wshape, strides, pads, dils, groups):
    x, w = f32(*xshape), f32(*wshape)
    out = C.conv_forward(np, x, w, strides, pads, dils, groups)
    g = f32(*out.shape)
    got = V.conv_input_grad(np, g, w, strides, pads, dils, groups, list(xshape[2:]), xshape[1])
    want = _transpose_reference(g, w, strides, pads, dils, groups, list(xshape[2:]))
    assert got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("xshape, mult, strides", [((2, 3, 17, 16), 1, [1, 1]), ((1, 64, 6, 5), 1, [1, 1]),
                                                   ((1, 64, 7, 7), 2, [2, 2]), ((1, 4, 6, 6), 1, [1, 1])])
def test_depthwise_paths_equal_a_grouped_convolution(xshape, mult, strides):
    """The column path (>= 256 output pixels), the channels-last einsum (>= 64 channels) and the per-tap path
    against the grouped im2col GEMM of the same filter (groups == channels taken as an ordinary grouped conv)."""
    c = xshape[1]
    x, w = f32(*xshape), f32(c * mult, 1, 3, 3)
    pads = [(1, 1), (1, 1)]
    got = C.conv_forward(np, x, w, strides, pads, [1, 1], c)
    xpad = np.pad(x, [(0, 0), (0, 0), *pads])
    outs = [(xpad.shape[2 + i] - 3) // strides[i] + 1 for i in range(2)]
    want = np.zeros((xshape[0], c * mult, *outs), np.float64)
    for ky in range(3):
        for kx in range(3):
            win = xpad[:, :, ky:ky + strides[0] * (outs[0] - 1) + 1:strides[0],
                       kx:kx + strides[1] * (outs[1] - 1) + 1:strides[1]]
            want += np.repeat(win, mult, axis=1) * w[:, 0, ky, kx].reshape(1, -1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xshape, wshape, strides, pads, dils, groups", [
    ((5, 3, 9, 8), (8, 3, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], 1),
    ((4, 4, 10, 9), (6, 4, 3, 2), [2, 1], [(0, 1), (1, 0)], [1, 2], 1),
    ((3, 2, 5, 6, 5), (4, 2, 3, 3, 2), [1, 2, 2], [(1, 1), (1, 1), (0, 0)], [1, 1, 2], 1),
])
def test_thin_convolutions_in_image_blocks_equal_the_whole_batch(monkeypatch, xshape, wshape, strides, pads, dils,
                                                                 groups):
    """Few output channels: the forward and Filter@GRAD make their columns a block of images at a time
    (C.column_blocks); blocks of one and two images against the whole batch at once."""
    x, w = f32(*xshape), f32(*wshape)
    monkeypatch.setattr(C, "COLUMN_BLOCK", 1 << 40)
    assert C.column_blocks(np, xshape[0], wshape[0], 10 ** 6) is None
    y = C.conv_forward(np, x, w, strides, pads, dils, groups)
    g = f32(*y.shape)
    dw = V.conv_filter_grad(np, x, g, w.shape, strides, pads, dils, groups)
    per_image = xshape[1] * math.prod(wshape[2:]) * math.prod(y.shape[2:])
    for block in (per_image, 2 * per_image):
        monkeypatch.setattr(C, "COLUMN_BLOCK", block)
        assert len(C.column_blocks(np, xshape[0], wshape[0] // groups, per_image)) > 1
        assert C.column_blocks(np, xshape[0], wshape[0] // groups, per_image, groups=2) is None
        np.testing.assert_allclose(C.conv_forward(np, x, w, strides, pads, dils, groups), y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(V.conv_filter_grad(np, x, g, w.shape, strides, pads, dils, groups), dw,
                                   rtol=1e-5, atol=1e-5 * float(np.abs(dw).max()))


def _max_pool_grad_reference(x, g, ksize, strides, pads):
    """Each output's gradient to the first maximum of its window in row-major order (Paddle's), by loops."""
    n, c, h, w = x.shape
    dx = np.zeros_like(x)
    for i, j, oy, ox in np.ndindex(*g.shape):
        best, at = -np.inf, None
        for ky, kx in np.ndindex(*ksize):
            y, xx = oy * strides[0] - pads[0] + ky, ox * strides[1] - pads[1] + kx
            if 0 <= y < h and 0 <= xx < w and x[i, j, y, xx] > best:
                best, at = x[i, j, y, xx], (y, xx)
        dx[i, j, at[0], at[1]] += g[i, j, oy, ox]
    return dx


@pytest.mark.parametrize("shape, ksize, strides, pads", [
    ((2, 3, 8, 8), [2, 2], [2, 2], [0, 0]),    # disjoint windows covering the input: written, not added
    ((2, 2, 8, 7), [2, 2], [3, 3], [0, 0]),    # disjoint, some inputs in no window
    ((2, 2, 7, 8), [3, 3], [2, 2], [1, 1]),    # overlapping and padded: added, then cropped
    ((1, 2, 6, 6), [3, 2], [1, 2], [0, 0]),    # overlapping along one dim only
])
def test_max_pool_gradient_goes_to_each_windows_first_maximum(shape, ksize, strides, pads):
    x = np.maximum(np.round(f32(*shape) * 2), 0)  # many ties: zeros after a ReLU, repeated small integers
    outs = [(shape[2 + d] + 2 * pads[d] - ksize[d]) // strides[d] + 1 for d in range(2)]
    pp = [(p, p) for p in pads]
    out = P._max_by_offsets(np, x, ksize, strides, pp, outs)
    g = f32(*out.shape)
    got = GP._max_grad_offsets(np, x, out, g, ksize, strides, pp, outs)
    np.testing.assert_allclose(got, _max_pool_grad_reference(x, g, ksize, strides, pads), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("xshape, strides, pads, dils", [
    ((2, 12, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1]),      # fewer pixels than channels: channels-last taps
    ((2, 16, 5, 4), [2, 1], [(1, 0), (1, 1)], [1, 2]),
    ((2, 30, 2, 3, 2), [1, 1, 1], [(1, 1), (0, 1), (1, 0)], [1, 1, 1]),
    ((2, 4, 6, 6), [1, 1], [(1, 1), (1, 1)], [1, 1]),       # more pixels: the GEMM path
])
def test_depthwise_filter_grad_paths_equal_the_grouped_gemm(xshape, strides, pads, dils):
    c, nd = xshape[1], len(xshape) - 2
    x, w = f32(*xshape), f32(c, 1, *([3] * nd))
    g = f32(*C.conv_forward(np, x, w, strides, pads, dils, c).shape)
    got = V.conv_filter_grad(np, x, g, w.shape, strides, pads, dils, c)
    want = V._filter_grad_gemm(np, x, g, w.shape, strides, pads, dils, c)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize("xshape, mult, strides", [((2, 64, 7, 6), 1, [2, 2]), ((1, 70, 5, 5), 1, [1, 2]),
                                                   ((2, 8, 7, 7), 1, [2, 2]), ((1, 64, 5, 5), 2, [2, 2])])
def test_depthwise_input_grad_layouts_equal_the_transposed_convolution(xshape, mult, strides):
    """_depthwise_input_grad channels-last (64+ channels, no multiplier) and channels-first, against col2im."""
    c = xshape[1]
    x, w = f32(*xshape), f32(c * mult, 1, 3, 3)
    pads, dils = [(1, 1), (1, 1)], [1, 1]
    g = f32(*C.conv_forward(np, x, w, strides, pads, dils, c).shape)
    got = V._depthwise_input_grad(np, g, w, strides, pads, dils, c, list(xshape[2:]))
    want = _transpose_reference(g, w, strides, pads, dils, c, list(xshape[2:]))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "masked", "huge", "far below zero", "one row far below", "nan row",
                                  "minus inf"])
def test_softmax_without_the_row_shift_gives_the_shifted_values(dtype, case):
    """softmax_of skips subtracting the row maxima only where that changes nothing but rounding; large logits,
    rows whose exp would underflow, NaN and -inf take (or give the same as) the shifted formula."""
    from kernelcore.ops.activation import softmax_of
    x = np.random.default_rng(3).standard_normal((3, 5, 16)).astype(dtype) * 4
    if case == "masked":
        x[..., 10:] -= 1e4
    elif case == "huge":
        x[1, 2, 3] = 500.0 if dtype == np.float32 else 5000.0
    elif case == "far below zero":
        x -= 2000.0
    elif case == "one row far below":
        x[2, 1] -= 3000.0
    elif case == "nan row":
        x[0, 4, 7] = np.nan
    elif case == "minus inf":
        x[1, :, :8] = -np.inf
    from kernelcore.ops.activation import _softmax_rows_unshifted
    # the unshifted path is taken exactly where it may be
    assert (_softmax_rows_unshifted(x) is not None) == (case in ("plain", "masked", "minus inf"))
    with np.errstate(all="ignore"):
        got = softmax_of(np, x)
        shifted = np.exp(x - x.max(axis=-1, keepdims=True))
        want = shifted / shifted.sum(axis=-1, keepdims=True)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=0)


@pytest.mark.parametrize("shape, lead", [((0, 5), 1), ((3, 0), 1), ((0, 4, 6), 2), ((2, 0, 3), 1)])
def test_sums_as_products_with_ones_take_empty_arrays(shape, lead):
    """row_sums / leading_sums on arrays with a zero-length axis (an rnn_grad over an empty batch)."""
    from kernelcore.ops.math import leading_sums, row_sums
    a = np.zeros(shape, np.float32)
    np.testing.assert_array_equal(leading_sums(np, a, lead), a.sum(axis=tuple(range(lead))))
    np.testing.assert_array_equal(row_sums(np, a), a.sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("shape, ksize, adaptive, pads", [
    ((8, 1280, 2, 2), [1, 1], True, [(0, 0)] * 2),        # MobileNetV2's classifier pool
    ((2, 3, 7, 5), [7, 5], False, [(0, 0)] * 2),          # a window of the map's size
    ((1, 2, 3, 4, 5), [1, 1, 1], True, [(0, 0)] * 3),     # 3-D
    ((3, 4, 1, 1), [1, 1], True, [(0, 0)] * 2),           # maps of one cell
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_average_over_whole_maps_is_each_maps_mean(shape, ksize, adaptive, pads, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    outs = [1] * (len(shape) - 2)
    assert P.whole_maps(x.shape, ksize, pads, outs, adaptive)
    got = P.pool_forward(np, x, "avg", ksize, [1] * len(outs), pads, outs, adaptive, True)
    want = x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-7)


def test_average_over_a_large_float16_map_does_not_overflow():
    """float16 maps keep NumPy's mean (which sums in float32): 90,000 cells of ~5 sum past float16's 65,504."""
    x = (rng.random((1, 2, 300, 300)) * 10).astype(np.float16)
    got = P.pool_forward(np, x, "avg", [1, 1], [1, 1], [(0, 0)] * 2, [1, 1], True, True)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), x.astype(np.float32).mean(axis=(2, 3), keepdims=True),
                               rtol=2e-3)


def test_whole_maps_excludes_padded_windows_and_larger_outputs():
    assert not P.whole_maps((1, 1, 4, 4), [4, 4], [(1, 0), (0, 0)], [1, 1], False)
    assert not P.whole_maps((1, 1, 4, 4), [2, 2], [(0, 0)] * 2, [2, 1], True)
    assert not P.whole_maps((1, 1, 4, 4), [3, 3], [(0, 0)] * 2, [1, 1], False)  # a window smaller than the map


def test_average_pool_gradient_over_a_large_float16_map_is_not_zero():
    """The whole-map gradient (g over the map's size, broadcast) is taken for float32 and float64 only: float16
    cannot hold 90,000, so g / size would give 0; float16 keeps the per-dim products."""
    import kernelcore as kc
    x = (rng.random((1, 2, 300, 300)) * 10).astype(np.float16)
    g = np.ones((1, 2, 1, 1), np.float16)
    prog = kc.Program()
    b = prog.global_block()
    for name, v in (("x", x), ("out", g), ("g", g)):
        b.create_var(name, list(v.shape), "float16")
    b.append_op("pool2d_grad", {"X": ["x"], "Out": ["out"], "Out@GRAD": ["g"]}, {"X@GRAD": ["dx"]},
                {"pooling_type": "avg", "ksize": [1, 1], "adaptive": True})
    (dx,) = kc.Executor().run(prog, feed={"x": x, "out": g, "g": g}, fetch_list=["dx"], scope=kc.Scope())
    assert dx.shape == x.shape
    np.testing.assert_allclose(dx.astype(np.float32), 1 / 90000, rtol=5e-2)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_average_pool_gradient_over_one_cell_maps_can_be_written(data_format):
    """Over maps of one cell the whole-map gradient has x's shape already; it is still a fresh array, never a
    read-only broadcast view, as every gradient a run gives back takes in-place writes."""
    import kernelcore as kc
    shape = (2, 3, 1, 1) if data_format == "NCHW" else (2, 1, 1, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    prog = kc.Program()
    b = prog.global_block()
    for name, v in (("x", x), ("out", g), ("g", g)):
        b.create_var(name, list(v.shape), "float32")
    b.append_op("pool2d_grad", {"X": ["x"], "Out": ["out"], "Out@GRAD": ["g"]}, {"X@GRAD": ["dx"]},
                {"pooling_type": "avg", "ksize": [1, 1], "adaptive": True, "data_format": data_format})
    (dx,) = kc.Executor().run(prog, feed={"x": x, "out": g, "g": g}, fetch_list=["dx"], scope=kc.Scope())
    np.testing.assert_array_equal(dx, g)
    assert dx.flags.writeable
    dx *= 2.0
