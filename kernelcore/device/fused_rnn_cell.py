"""The rnn op's LSTM step on a GPU as two launches: the recurrent product (cuBLAS, with the step's input
projection added) and one kernel for the rest (the four gates' activations, c and h), where the reference
(kernelcore/ops/rnn.py RnnSteps.lstm_step) runs about ten array expressions, each a launch. It replaces that one
method of RnnSteps, as kernelcore/native/rnn.py's C subclass does on the host; its gradient's step likewise
(lstm_step_grad: one kernel for d x_proj and dc_prev, then the product with W_hh). The GRU step likewise: the
recurrent product, then one kernel for bias_hh, both gates, the candidate and h (gru_step); its gradient's step
the candidate's recurrent product, one kernel for d x_proj, dhw and dh z, then the product with W_hh
(gru_step_grad). The passes and the simple RNNs stay the reference's."""
from __future__ import annotations

import numpy as np

from ..grad import rnn as GR
from ..ops import rnn as R
from ..runtime.fast_paths import fast_kernel
from .declare import FLAT_THREADS, RAW, check_flat_launch, declare, flat_blocks, i32, on_device

HALF = np.float32(0.5)


def _sigmoid(z):
    return np.tanh(z * HALF) * HALF + HALF  # the reference's sigmoid (ops/rnn.py): no overflow for large |z|


def _lstm_cell_twin(grid, block, g, c_prev, h, c, batch, hidden):
    batch, hidden = int(batch), int(hidden)
    check_flat_launch(grid, block, batch * hidden)
    g2 = g.reshape(batch, 4 * hidden)
    i, f = _sigmoid(g2[:, :hidden]), _sigmoid(g2[:, hidden:2 * hidden])
    cand, o = np.tanh(g2[:, 2 * hidden:3 * hidden]), _sigmoid(g2[:, 3 * hidden:])
    g2[:, :hidden], g2[:, hidden:2 * hidden], g2[:, 2 * hidden:3 * hidden], g2[:, 3 * hidden:] = i, f, cand, o
    cn = f * c_prev.reshape(batch, hidden) + i * cand
    c.reshape(batch, hidden)[...] = cn
    h.reshape(batch, hidden)[...] = np.tanh(cn) * o


LSTM_CELL = declare("kc_lstm_cell", RAW, r"""
extern "C" __global__ void kc_lstm_cell(float* g, const float* c_prev, float* h, float* c, int batch, int hidden) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * hidden) return;
    int b = idx / hidden, j = idx % hidden;
    float* gb = g + (long long)b * 4 * hidden;
    float i = tanhf(gb[j] * 0.5f) * 0.5f + 0.5f;
    float f = tanhf(gb[hidden + j] * 0.5f) * 0.5f + 0.5f;
    float cand = tanhf(gb[2 * hidden + j]);
    float o = tanhf(gb[3 * hidden + j] * 0.5f) * 0.5f + 0.5f;
    gb[j] = i;
    gb[hidden + j] = f;
    gb[2 * hidden + j] = cand;
    gb[3 * hidden + j] = o;
    float cn = f * c_prev[idx] + i * cand;
    c[idx] = cn;
    h[idx] = tanhf(cn) * o;
}
""", twin=_lstm_cell_twin)


def _lstm_cell_grad_twin(grid, block, gates, c, c_prev, dh, dc, d_pre, dc_prev, batch, hidden):
    """kernelcore/grad/rnn.py _lstm_cell_backward's operations, in its order."""
    batch, hidden = int(batch), int(hidden)
    check_flat_launch(grid, block, batch * hidden)
    g4 = gates.reshape(batch, 4, hidden)
    i, f, cand, o = g4[:, 0], g4[:, 1], g4[:, 2], g4[:, 3]
    one = np.float32(1)
    tc = np.tanh(c)
    dcell = ((one - tc * tc) * o) * dh + dc
    d4 = d_pre.reshape(batch, 4, hidden)
    d4[:, 0] = ((one - i) * i) * (dcell * cand)
    d4[:, 1] = ((one - f) * f) * (dcell * c_prev)
    d4[:, 2] = ((one - cand) * (cand + one)) * (dcell * i)
    d4[:, 3] = ((one - o) * o) * (dh * tc)
    dc_prev.reshape(batch, hidden)[...] = dcell * f


LSTM_CELL_GRAD = declare("kc_lstm_cell_grad", RAW, r"""
extern "C" __global__ void kc_lstm_cell_grad(const float* gates, const float* c, const float* c_prev, const float* dh,
                                             const float* dc, float* d_pre, float* dc_prev, int batch, int hidden) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * hidden) return;
    int b = idx / hidden, j = idx % hidden;
    const float* gb = gates + (long long)b * 4 * hidden;
    float* db = d_pre + (long long)b * 4 * hidden;
    float i = gb[j], f = gb[hidden + j], cand = gb[2 * hidden + j], o = gb[3 * hidden + j];
    float tc = tanhf(c[idx]);
    float dcell = ((1.0f - tc * tc) * o) * dh[idx] + dc[idx];
    db[j] = ((1.0f - i) * i) * (dcell * cand);
    db[hidden + j] = ((1.0f - f) * f) * (dcell * c_prev[idx]);
    db[2 * hidden + j] = ((1.0f - cand) * (cand + 1.0f)) * (dcell * i);
    db[3 * hidden + j] = ((1.0f - o) * o) * (dh[idx] * tc);
    dc_prev[idx] = dcell * f;
}
""", twin=_lstm_cell_grad_twin)


def _gru_cell_twin(grid, block, x_proj, hw, b_hh, h_prev, h, batch, hidden):
    """RnnSteps.gru_step's operations after its product, in its order; the gates written over hw."""
    batch, hidden = int(batch), int(hidden)
    check_flat_launch(grid, block, batch * hidden)
    g = hw.reshape(batch, 3 * hidden)
    xq = x_proj.reshape(batch, 3 * hidden)
    g += b_hh.reshape(1, 3 * hidden)
    r = _sigmoid(xq[:, :hidden] + g[:, :hidden])
    z = _sigmoid(xq[:, hidden:2 * hidden] + g[:, hidden:2 * hidden])
    cand = np.tanh(xq[:, 2 * hidden:] + r * g[:, 2 * hidden:])
    h.reshape(batch, hidden)[...] = (h_prev.reshape(batch, hidden) - cand) * z + cand
    g[:, :hidden], g[:, hidden:2 * hidden], g[:, 2 * hidden:] = r, z, cand


GRU_CELL = declare("kc_gru_cell", RAW, r"""
extern "C" __global__ void kc_gru_cell(const float* x_proj, float* hw, const float* b_hh, const float* h_prev,
                                       float* h, int batch, int hidden) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * hidden) return;
    int b = idx / hidden, j = idx % hidden;
    const float* xb = x_proj + (long long)b * 3 * hidden;
    float* gb = hw + (long long)b * 3 * hidden;
    float hr = gb[j] + b_hh[j];
    float hz = gb[hidden + j] + b_hh[hidden + j];
    float hc = gb[2 * hidden + j] + b_hh[2 * hidden + j];
    float r = tanhf((xb[j] + hr) * 0.5f) * 0.5f + 0.5f;
    float z = tanhf((xb[hidden + j] + hz) * 0.5f) * 0.5f + 0.5f;
    float cand = tanhf(xb[2 * hidden + j] + r * hc);
    h[idx] = (h_prev[idx] - cand) * z + cand;
    gb[j] = r;
    gb[hidden + j] = z;
    gb[2 * hidden + j] = cand;
}
""", twin=_gru_cell_twin)


def _gru_cell_grad_twin(grid, block, gates, hc, b_hh, h_prev, dh, dx, dhw, dh_z, batch, hidden):
    """kernelcore/grad/rnn.py _cell_backward's GRU operations, in its order."""
    batch, hidden = int(batch), int(hidden)
    check_flat_launch(grid, block, batch * hidden)
    g3 = gates.reshape(batch, 3, hidden)
    r, z, cand = g3[:, 0], g3[:, 1], g3[:, 2]
    one = np.float32(1)
    hcb = hc.reshape(batch, hidden) + b_hh.reshape(3, hidden)[2]
    dhb, hp = dh.reshape(batch, hidden), h_prev.reshape(batch, hidden)
    dpre_c = dhb * (one - z) * (one - cand * cand)
    dpre_r = dpre_c * hcb * r * (one - r)
    dpre_z = dhb * (hp - cand) * z * (one - z)
    dx3, dhw3 = dx.reshape(batch, 3, hidden), dhw.reshape(batch, 3, hidden)
    dx3[:, 0], dx3[:, 1], dx3[:, 2] = dpre_r, dpre_z, dpre_c
    dhw3[:, 0], dhw3[:, 1], dhw3[:, 2] = dpre_r, dpre_z, dpre_c * r
    dh_z.reshape(batch, hidden)[...] = dhb * z


GRU_CELL_GRAD = declare("kc_gru_cell_grad", RAW, r"""
extern "C" __global__ void kc_gru_cell_grad(const float* gates, const float* hc, const float* b_hh,
                                            const float* h_prev, const float* dh, float* dx, float* dhw,
                                            float* dh_z, int batch, int hidden) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * hidden) return;
    int b = idx / hidden, j = idx % hidden;
    long long row = (long long)b * 3 * hidden;
    float r = gates[row + j], z = gates[row + hidden + j], cand = gates[row + 2 * hidden + j];
    float hcb = hc[idx] + b_hh[2 * hidden + j];
    float d = dh[idx];
    float dpre_c = d * (1.0f - z) * (1.0f - cand * cand);
    float dpre_r = dpre_c * hcb * r * (1.0f - r);
    float dpre_z = d * (h_prev[idx] - cand) * z * (1.0f - z);
    dx[row + j] = dpre_r;
    dx[row + hidden + j] = dpre_z;
    dx[row + 2 * hidden + j] = dpre_c;
    dhw[row + j] = dpre_r;
    dhw[row + hidden + j] = dpre_z;
    dhw[row + 2 * hidden + j] = dpre_c * r;
    dh_z[idx] = d * z;
}
""", twin=_gru_cell_grad_twin)


class DeviceSteps(R.RnnSteps):
    """RnnSteps with the LSTM and GRU steps' cells, and their gradients', in one kernel each."""

    def gru_step(self, xp, x_proj, h_prev, w_hh_t, b_hh):
        if not on_device(xp, x_proj, h_prev, b_hh):  # asked before the product: it runs once
            return super().gru_step(xp, x_proj, h_prev, w_hh_t, b_hh)
        hw = xp.ascontiguousarray(self.recurrent_product(xp, h_prev, w_hh_t))
        batch, hidden = h_prev.shape
        h = xp.empty((batch, hidden), dtype=hw.dtype)
        GRU_CELL.on(xp)(flat_blocks(batch * hidden), (FLAT_THREADS,),
                        (x_proj, hw, b_hh, h_prev, h, i32(batch), i32(hidden)))
        return hw, h

    def lstm_step(self, xp, x_proj, h_prev, c_prev, w_hh_t, scale_shift, h_out):
        if not on_device(xp, c_prev) or x_proj.dtype != np.float32:  # asked before the product: it runs once
            return super().lstm_step(xp, x_proj, h_prev, c_prev, w_hh_t, scale_shift, h_out)
        g = xp.ascontiguousarray(self.recurrent_product(xp, h_prev, w_hh_t, add=x_proj))
        batch, hidden = c_prev.shape
        direct = h_out is not None and h_out.flags.c_contiguous and h_out.dtype == g.dtype
        h = h_out if direct else xp.empty((batch, hidden), dtype=g.dtype)
        c = xp.empty((batch, hidden), dtype=g.dtype)
        LSTM_CELL.on(xp)(flat_blocks(batch * hidden), (FLAT_THREADS,), (g, c_prev, h, c, i32(batch), i32(hidden)))
        if h_out is not None and not direct:
            h_out[...] = h
            h = h_out
        return g, h, c

    def gru_step_grad(self, xp, gates, h_prev, dh, w_cand_t, b_hh, w_back):
        """(d x_proj, dhw, dh_prev): the candidate's recurrent product, one kernel, the product with W_hh; None
        where the kernel does not take these arrays."""
        if not on_device(xp, gates, h_prev, dh, b_hh):
            return None
        batch, hidden = dh.shape
        hc = xp.ascontiguousarray(self.recurrent_product(xp, h_prev, w_cand_t))
        dx = xp.empty((batch, 3 * hidden), dtype=dh.dtype)
        dhw = xp.empty((batch, 3 * hidden), dtype=dh.dtype)
        dh_z = xp.empty((batch, hidden), dtype=dh.dtype)
        GRU_CELL_GRAD.on(xp)(flat_blocks(batch * hidden), (FLAT_THREADS,),
                             (gates, hc, b_hh, h_prev, dh, dx, dhw, dh_z, i32(batch), i32(hidden)))
        return dx, dhw, self.recurrent_product(xp, dhw, w_back, add=dh_z)

    def lstm_step_grad(self, xp, gates, c, c_prev, dh, dc, w_back, d_pre):
        """d_pre written and (dh_prev, dc_prev), or None where the kernel does not take these arrays."""
        if not on_device(xp, gates, c, c_prev, dh, dc, d_pre):
            return None
        batch, hidden = c.shape
        dc_prev = xp.empty((batch, hidden), dtype=c.dtype)
        LSTM_CELL_GRAD.on(xp)(flat_blocks(batch * hidden), (FLAT_THREADS,),
                              (gates, c, c_prev, dh, dc, d_pre, dc_prev, i32(batch), i32(hidden)))
        return self.recurrent_product(xp, d_pre, w_back), dc_prev


DEVICE_STEPS = DeviceSteps()


def _cell_on_device(xp, ins, attrs) -> bool:
    x, pre, weights, _seq_len = ins
    return attrs["mode"] in ("LSTM", "GRU") and on_device(xp, x, *(pre or []), *(weights or []))


@fast_kernel("rnn", _cell_on_device, place="gpu")
def rnn(ctx, ins, attrs):
    return (yield from R.run_rnn(DEVICE_STEPS, ctx, ins, attrs))


def _cell_grad_on_device(xp, ins, attrs) -> bool:
    x, pre, weights = ins[0], ins[1], ins[2]
    return attrs["mode"] in ("LSTM", "GRU") and on_device(xp, x, *(pre or []), *(weights or []))


@fast_kernel("rnn_grad", _cell_grad_on_device, place="gpu")
def rnn_grad(ctx, ins, attrs):
    return GR.run_rnn_grad(DEVICE_STEPS, ctx, ins, attrs)
