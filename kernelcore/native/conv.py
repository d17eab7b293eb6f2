"""The convolutions' fast variants (kernelcore/runtime/fast_paths.py) over their reference kernels
(kernelcore/ops/conv.py, kernelcore/grad/conv.py), on the host:

  * the leaves in C, for float32 2-D arrays: a one-group convolution through conv_gemm.c (im2col straight into its
    GEMM's panels, the output written in NCHW), a depthwise one through depthwise_conv.c (no padded copy), the
    im2col columns of the others through im2col.c, and a one-group transposed convolution's col2im adds through
    col2im.c. CBodies puts them in place of ConvBodies' leaves, so every body built on those leaves (a stride-1
    Input@GRAD is a forward, Filter@GRAD a GEMM with im2col columns) takes them;
  * the work in parts on the cores (kernelcore/runtime/cpu_parts.py) where no C kernel shares its loops out
    itself: a forward by images or output channels, Input@GRAD beside Filter@GRAD.

Where a leaf's C kernel does not take its arrays (another dtype, 3-D, a transposed view) the reference's leaf runs.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from .. import native
from ..grad import conv as V
from ..ops import conv as C
from ..runtime.cpu_parts import chunks, cpu_parts, run_parts, run_parts_into
from ..runtime.fast_paths import fast_kernel


class CBodies(C.ConvBodies):
    """ConvBodies with the C leaves where they take the arrays (tests/test_native.py compares them)."""

    def forward(self, xp, x, w, strides, pads, dils, groups):
        if native.depthwise_ready(xp, x, w, groups):  # depthwise_conv.c: no padded copy
            outs = C.output_sizes(x.shape, w.shape, strides, pads, dils)
            return native.depthwise_conv2d(x, w, strides, [lo for lo, _ in pads], dils, outs)
        if native.conv2d_ready(xp, x, w, groups):  # conv_gemm.c: im2col into its GEMM's panels
            outs = C.output_sizes(x.shape, w.shape, strides, pads, dils)
            return native.conv2d(x, w, strides, [lo for lo, _ in pads], dils, outs)
        return super().forward(xp, x, w, strides, pads, dils, groups)

    def im2col(self, xp, x, ks, strides, pads, dils, outs):
        if x.ndim == 4 and native.ready(xp, x):  # im2col.c: the padding written as zeros, no padded copy
            return native.im2col(x, ks, strides, [lo for lo, _ in pads], dils, outs)
        return super().im2col(xp, x, ks, strides, pads, dils, outs)

    def transpose_forward(self, xp, x, w, strides, pads, dils, groups, out_sizes):
        n, cin = x.shape[:2]
        ins, og, ks = x.shape[2:], w.shape[1], w.shape[2:]
        if len(ins) != 2 or groups != 1 or not native.ready(xp, x, w):
            return super().transpose_forward(xp, x, w, strides, pads, dils, groups, out_sizes)
        # col2im.c: the columns [og * taps, n * p] from one GEMM, added a plane at a time in cache, in the same
        # order as the reference's adds (ResNet-18's 128-channel input gradients on 8x8 maps: the adds took 1.4 ms
        # of 2.4 on one thread)
        p = math.prod(ins)
        xm = xp.ascontiguousarray(x.reshape(n, cin, p).transpose(1, 0, 2)).reshape(cin, n * p)
        cols = xp.matmul(w.reshape(cin, og * math.prod(ks)).T, xm)
        return native.col2im(cols, n, og, out_sizes, ks, strides, [lo for lo, _ in pads], dils, ins)


FAST = CBodies()

# a depthwise convolution's multiply-add costs ~16 of a GEMM-bound one's (per-channel products, no BLAS
# blocking): MobileNetV2's depthwise layers on 16x16 maps, 2.7M multiply-adds, took 0.9 ms on one core
DEPTHWISE_WORK = 16


def conv_macs(x_shape, w_shape, strides) -> int:
    """About how many multiply-adds a convolution of these shapes makes (output pixels from input / stride)."""
    return (x_shape[0] * math.prod(w_shape) * math.prod(x_shape[2:])) // max(1, math.prod(strides))


def conv_work(x_shape, w_shape, strides, groups) -> int:
    """A convolution's work in kernelcore/runtime/cpu_parts.py's units: its multiply-adds, scaled for the
    depthwise path."""
    depthwise = groups == x_shape[1] and w_shape[1] == 1 and groups > 1
    return conv_macs(x_shape, w_shape, strides) * (DEPTHWISE_WORK if depthwise else 1)


def forward_in_parts(xp, x, w, strides, pads, dils, groups):
    """FAST.forward in parts on the CPU's cores: by images where the columns outweigh the filter (early layers:
    many pixels), else by output channels, so that each part reads its share of the filter (late layers:
    ResNet-18's 512x512x3x3 filter on 2x2 maps ran 1.9x slower split by images)."""
    # the C kernels (depthwise, one-group 2-D) share their loops out over the cores themselves
    in_c = native.depthwise_ready(xp, x, w, groups) or native.conv2d_ready(xp, x, w, groups)
    parts = 1 if in_c else cpu_parts(xp, conv_work(x.shape, w.shape, strides, groups))
    n, o = x.shape[0], w.shape[0]
    if parts < 2:
        return FAST.forward(xp, x, w, strides, pads, dils, groups)
    out_pixels = n * math.prod(x.shape[2:]) // max(1, math.prod(strides))
    shape = (n, o, *(C.conv_out_size(x.shape[2 + i], w.shape[2 + i], pads[i], strides[i], dils[i])
                     for i in range(x.ndim - 2)))
    dtype = xp.result_type(x, w)
    if any(v <= 0 for v in shape[2:]):
        return FAST.forward(xp, x, w, strides, pads, dils, groups)  # which says why the output would be empty
    if groups == 1 and out_pixels < o and o > 1:
        return run_parts_into(xp, shape, dtype, 1, [(s, partial(FAST.forward, xp, x, w[s], strides, pads, dils, 1))
                                                    for s in chunks(o, parts)])
    if n < 2:
        return FAST.forward(xp, x, w, strides, pads, dils, groups)
    return run_parts_into(xp, shape, dtype, 0, [(s, partial(FAST.forward, xp, x[s], w, strides, pads, dils, groups))
                                                for s in chunks(n, parts)])


def grads_in_parts(xp, x, w, g, strides, pads, dils, groups, want_dx, want_dw):
    """(Input@GRAD, Filter@GRAD) of a convolution, None where not wanted: a depthwise one's both in
    depthwise_conv.c, else in parts on the CPU's cores, Input@GRAD by images, Filter@GRAD by input channels (one
    group) or by groups; each element sums the same terms as the whole op's."""
    n, c = x.shape[:2]
    if native.depthwise_ready(xp, x, w, groups) and g.shape == (n, c, *(
            C.conv_out_size(x.shape[2 + i], w.shape[2 + i], pads[i], strides[i], dils[i]) for i in range(2))):
        # both gradients a plane at a time, its own threads
        return native.depthwise_conv2d_grads(x, w, g, strides, [lo for lo, _ in pads], dils, want_dx, want_dw)
    # each part makes one of the two gradients (or a share of one): the split pays when one outlasts the hand-off
    # (MobileNetV2's 1x1 convolutions' gradients, 0.2-0.6 ms together, ran 5-35% slower split)
    parts = cpu_parts(xp, conv_work(x.shape, w.shape, strides, groups))
    in_grad = partial(V.conv_input_grad, bodies=FAST)
    filter_grad = partial(V.conv_filter_grad, bodies=FAST)
    if parts < 2:
        return (in_grad(xp, g, w, strides, pads, dils, groups, list(x.shape[2:]), c) if want_dx else None,
                filter_grad(xp, x, g, w.shape, strides, pads, dils, groups) if want_dw else None)
    calls = [partial(in_grad, xp, g[s], w, strides, pads, dils, groups, list(x.shape[2:]), c)
             for s in chunks(n, (parts + 1) // 2 if want_dw else parts)] if want_dx else []
    dx_calls = len(calls)
    if want_dw:
        o, cg = w.shape[:2]
        dw_parts = parts - dx_calls
        if groups == 1:  # by input channels: Filter@GRAD's columns
            calls += [partial(filter_grad, xp, x[:, s], g, (o, s.stop - s.start, *w.shape[2:]), strides, pads,
                              dils, 1) for s in chunks(c, dw_parts)]
        else:  # by groups: Filter@GRAD's rows
            og = o // groups
            calls += [partial(filter_grad, xp, x[:, s.start * cg:s.stop * cg], g[:, s.start * og:s.stop * og],
                              ((s.stop - s.start) * og, *w.shape[1:]), strides, pads, dils, s.stop - s.start)
                      for s in chunks(groups, dw_parts)]
    done = run_parts(calls)
    dx = (done[0] if dx_calls == 1 else xp.concatenate(done[:dx_calls])) if want_dx else None
    dws = done[dx_calls:]
    dw = (dws[0] if len(dws) == 1 else xp.concatenate(dws, axis=1 if groups == 1 else 0)) if want_dw else None
    return dx, dw


def _on_the_host(xp, ins, attrs) -> bool:
    """The variants' gate: NumPy arrays (each leaf then asks its C kernel, and cpu_parts the run, what it takes)."""
    return xp is np


# float64 convolutions run in parts too (their leaves are the reference's)
for _dtype in ("float32", "float64"):
    for _type, _nd in (("conv2d", 2), ("depthwise_conv2d", 2), ("conv3d", 3)):
        fast_kernel(_type, _on_the_host, dtype=_dtype)(C.conv_kernel(_type, _nd, forward_in_parts))
        fast_kernel(f"{_type}_grad", _on_the_host, dtype=_dtype)(V.conv_grad_kernel(_type, _nd, grads_in_parts))
for _type in ("conv2d_transpose", "depthwise_conv2d_transpose"):  # the 3-D one has no C leaf
    fast_kernel(_type, _on_the_host)(C.conv_transpose_kernel(_type, 2, FAST))
    fast_kernel(f"{_type}_grad", _on_the_host)(V.conv_transpose_grad_kernel(_type, 2, FAST))
