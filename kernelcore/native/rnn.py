"""The fused rnn op's fast variant (kernelcore/runtime/fast_paths.py) over its reference kernels
(kernelcore/ops/rnn.py, kernelcore/grad/rnn.py), on the host: CSteps puts kernelcore/native's C kernels in place of
RnnSteps' products and cells where they take the arrays (float32, contiguous), and the pass-wide products in parts
on the cores (kernelcore/runtime/cpu_parts.py):

  * every per-step product with the recurrent weight through gemm_packed.c, whose W is packed once per pass
    (recurrent_weight, step_matrix), where OpenBLAS packs it again every step ([32, 256] @ [256, 1024] in 115 us
    on one core, OpenBLAS's 164; in a 2-layer LSTM's training step, 172 against 240 us a product);
  * the input projections through that GEMM too, the bias added as it writes its sums, its threads sharing row
    chunks (a 2-layer LSTM's inference, batch 32, 50 steps, hidden 256: 17.6 ms on two threads against 19.6 with
    OpenBLAS in parts by rows; one thread: the same);
  * an LSTM step in one call (lstm_step.c: the elementwise part on each block while the GEMM has just made it,
    where NumPy's five passes find the arrays pushed out of cache), its backward likewise, and an unobserved
    LSTM pass's steps in one call (the same operations in the same order, so the same values).

With the C steps the program runs split (cpu_parts.split_run), which holds OpenBLAS, whose worker spins after each
call on the core the C threads need, at one thread; the weight gradients then run in parts (cpu_parts.matmul).
"""
from __future__ import annotations

import numpy as np

from .. import native
from ..grad import rnn as GR
from ..ops import rnn as R
from ..runtime import cpu_parts
from ..runtime.fast_paths import fast_kernel


class CSteps(R.RnnSteps):
    """RnnSteps with the C kernels where they take the arrays (tests/test_native.py compares them)."""

    def recurrent_weight(self, xp, w_hh, gates: int = 1):
        # packed from the transposed view (no copy first); an LSTM's four gates' columns packed apart for lstm_step
        if native.gemm_ready(xp, w_hh):
            return self.step_matrix(xp, w_hh.T, gates)
        return super().recurrent_weight(xp, w_hh, gates)

    def step_matrix(self, xp, b, groups: int = 1):
        return native.PackedColumns(b, groups) if native.gemm_ready(xp, b) else b

    def recurrent_product(self, xp, a, w, add=None):
        if not isinstance(w, native.PackedColumns):
            return super().recurrent_product(xp, a, w, add)
        if w.plain and native.gemm_ready(xp, a) and (add is None or native.ready(xp, add)):
            return native.gemm_packed(a, w, add)  # adds `add` as it writes its sums: one pass less
        return super().recurrent_product(xp, a, w.matrix, add)

    def matmul(self, xp, a, b):
        return cpu_parts.matmul(xp, a, b)

    def input_projection(self, xp, flat_in, w_ih, bias):
        if native.gemm_ready(xp, flat_in, w_ih) and native.ready(xp, bias):
            return native.gemm_packed(flat_in, native.PackedColumns(w_ih.T), bias)
        return super().input_projection(xp, flat_in, w_ih, bias)

    def lstm_step(self, xp, x_proj, h_prev, c_prev, w_hh_t, scale_shift, h_out):
        if _packed_by_gate(w_hh_t) and native.gemm_ready(xp, h_prev) and \
                native.ready(xp, x_proj, c_prev, *(() if h_out is None else (h_out,))):
            return native.lstm_step(h_prev, w_hh_t, x_proj, c_prev, h_out)
        return super().lstm_step(xp, x_proj, h_prev, c_prev, w_hh_t, scale_shift, h_out)

    def lstm_pass(self, xp, x_proj, h0, c0, w_hh_t, out, reverse: bool):
        # Out among the arrays: an Input narrower than its float32 weights gives a float32 x_proj but an Out of its
        # own dtype, which the C steps must not write
        if _packed_by_gate(w_hh_t) and native.ready(xp, x_proj, h0, c0, out):
            return native.lstm_sequence(x_proj, h0, c0, w_hh_t, out, reverse=reverse)
        return None

    def lstm_step_grad(self, xp, gates, c, c_prev, dh, dc, w_back, d_pre):
        # the reference's passes in one, then the GEMM while d_pre is in cache
        if isinstance(w_back, native.PackedColumns) and w_back.plain and \
                native.ready(xp, gates, c, c_prev, dh, dc, d_pre):
            return native.lstm_step_grad(gates, c, c_prev, dh, dc, w_back, d_pre)
        return None


def _packed_by_gate(w) -> bool:
    return isinstance(w, native.PackedColumns) and w.groups == 4


FAST = CSteps()
STEPS_IN_C = native.library() is not None


def rnn(ctx, ins, attrs):
    return (yield from R.run_rnn(FAST, ctx, ins, attrs))


def rnn_grad(ctx, ins, attrs):
    return GR.run_rnn_grad(FAST, ctx, ins, attrs)


def _on_the_host(xp, ins, attrs) -> bool:
    """The variants' gate: NumPy arrays (each product then asks its C kernel what it takes)."""
    return xp is np


for _dtype in ("float32", "float64"):  # float64 passes keep the weight gradients in parts
    fast_kernel("rnn", _on_the_host, dtype=_dtype)(rnn)
    fast_kernel("rnn_grad", _on_the_host, dtype=_dtype)(rnn_grad)
# the C steps share their loops over the run's threads, which a split run holds OpenBLAS off; without them the
# reference's small OpenBLAS products gain from its own threads (kernelcore/ops/rnn.py)
for _op in (R.RNN, GR.RNN_GRAD):
    _op.runs_in_parts, _op.needs_blas_threads = STEPS_IN_C, not STEPS_IN_C
