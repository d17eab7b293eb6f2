"""Cases for kernelcore/ops/rnn.py (the fused rnn op and shape).

`reference_rnn` is a plain NumPy loop written from Paddle's cell formulas (paddle.nn.LSTMCell / GRUCell /
SimpleRNNCell), independent of the kernel: one sequence at a time, one timestep at a time, and sequence
lengths handled by running only the valid steps (the backward direction starts at length - 1), not by masks.
tests/test_paddle_rnn.py checks it against Paddle itself.
"""
import numpy as np

from . import Case

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    if mode == "LSTM":
        g = w_ih @ x + b_ih + w_hh @ h + b_hh
        i, f, cand, o = np.split(g, 4)
        c = _sig(f) * c + _sig(i) * np.tanh(cand)
        return _sig(o) * np.tanh(c), c
    if mode == "GRU":
        xr, xz, xc = np.split(w_ih @ x + b_ih, 3)
        hr, hz, hc = np.split(w_hh @ h + b_hh, 3)
        r, z = _sig(xr + hr), _sig(xz + hz)
        cand = np.tanh(xc + r * hc)
        return z * h + (1 - z) * cand, None
    pre = w_ih @ x + b_ih + w_hh @ h + b_hh
    return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)), None


def reference_rnn(x, pre_states, weights, mode, num_layers, bidirec, hidden, seq_len=None):
    """x [T, B, I] -> (out [T, B, D*H], [h_n (, c_n)]) in float64."""
    x = np.asarray(x, np.float64)
    T, B, _ = x.shape
    D = 2 if bidirec else 1
    lengths = [T] * B if seq_len is None else [min(int(n), T) for n in seq_len]
    ws = [np.asarray(w, np.float64) for w in weights]
    half = 2 * num_layers * D
    h0 = np.asarray(pre_states[0], np.float64)
    c0 = np.asarray(pre_states[1], np.float64) if mode == "LSTM" else None
    hn, cn = np.zeros_like(h0), (np.zeros_like(c0) if c0 is not None else None)
    inp = x
    for layer in range(num_layers):
        out = np.zeros((T, B, D * hidden))
        for d in range(D):
            k = layer * D + d
            w_ih, w_hh, b_ih, b_hh = ws[2 * k], ws[2 * k + 1], ws[half + 2 * k], ws[half + 2 * k + 1]
            for b in range(B):
                h = h0[k, b]
                c = c0[k, b] if c0 is not None else None
                steps = range(lengths[b] - 1, -1, -1) if d else range(lengths[b])
                for t in steps:
                    h, c = _cell(mode, inp[t, b], h, c, w_ih, w_hh, b_ih, b_hh)
                    out[t, b, d * hidden:(d + 1) * hidden] = h
                hn[k, b] = h
                if c is not None:
                    cn[k, b] = c
        inp = out
    return inp, [hn] + ([cn] if mode == "LSTM" else [])


def random_rnn(mode, num_layers, bidirec, T=5, B=3, I=4, H=3, seed=0):
    """Inputs for an rnn op: x, pre_states, weights (Paddle's WeightList order)."""
    rng = np.random.default_rng(seed)
    D = 2 if bidirec else 1
    G = GATES[mode]
    f32 = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    ws, bs = [], []
    for layer in range(num_layers):
        n_in = I if layer == 0 else D * H
        for _ in range(D):
            ws += [f32(G * H, n_in), f32(G * H, H)]
            bs += [f32(G * H), f32(G * H)]
    pre = [f32(num_layers * D, B, H) for _ in range(2 if mode == "LSTM" else 1)]
    return f32(T, B, I), pre, ws + bs


def _case(mode, layers, bidirec, seq_len=None, **kw):
    x, pre, weights = random_rnn(mode, layers, bidirec, **kw)
    inputs = {"Input": x, "PreState": pre, "WeightList": weights}
    if seq_len is not None:
        inputs["SequenceLength"] = np.array(seq_len, np.int64)
    attrs = {"mode": mode, "num_layers": layers, "is_bidirec": bidirec, "hidden_size": pre[0].shape[2],
             "input_size": x.shape[2], "is_test": True}

    def expected(Input, PreState, WeightList, SequenceLength=None, **a):
        out, states = reference_rnn(Input, PreState, WeightList, a["mode"], a["num_layers"], a["is_bidirec"],
                                    a["hidden_size"], SequenceLength)
        return {"Out": out.astype(np.float32), "State": [s.astype(np.float32) for s in states]}

    tag = f"{mode.lower()}_{layers}l{'_bi' if bidirec else ''}{'_len' if seq_len is not None else ''}"
    return Case("rnn", inputs, expected, attrs=attrs, id=tag, rtol=1e-4, atol=1e-5)


CASES = [
    # one State output each (the case builder names one variable per duplicable output; LSTM's two states
    # are checked in tests/test_paddle_rnn.py)
    _case("GRU", 2, True),
    _case("GRU", 1, False, seq_len=[5, 2, 0]),
    _case("RNN_TANH", 2, False, seq_len=[1, 5, 3]),
    _case("RNN_RELU", 1, True, seq_len=[4, 5, 2]),
    Case("shape", {"Input": np.zeros((2, 0, 3), np.float32)},
         lambda Input, **a: {"Out": np.array([2, 0, 3], np.int32)}, id="shape_with_a_zero_dim"),
]
