"""The StaticRNN program the tests share: a tanh cell over a time-major sequence, built with kc.layers.StaticRNN,
and its hidden states from a NumPy loop (the reference).

    h_t = tanh(x_t . w + h_{t-1} . u [+ b]),  h_{-1} = h0,  the step output h_t

where `.` is a matrix product (w [D, H], u [H, H]) or, `elementwise`, a product element by element (w, u [H];
D == H). Without `recurrent` the state is added as it is (h_t = tanh(x_t . w + h_{t-1})). The ops are appended in
this order in the step block: x_t . w, h_{t-1} . u, their sum, the bias, tanh.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import kernelcore as kc


@dataclass
class StaticRnn:
    program: kc.Program
    out: kc.Variable       # the step outputs stacked: [T, B, H]
    rnn: object            # the kc.layers.StaticRNN that built it
    h_prev: kc.Variable    # the memory inside the step block (h_{t-1})
    h_new: kc.Variable     # the state the step makes (h_t)


def build_tanh_rnn(T: int, B: int, D: int, H: int, *, reverse: bool = False, recurrent: bool = True,
                   bias: bool = False, elementwise: bool = False, params: bool = True, dtype: str = "float32",
                   name: str | None = None, program: kc.Program | None = None) -> StaticRnn:
    """Declare x [T, B, D] and h0 [B, H] in block 0 of `program` (a new one by default) and append the StaticRNN.
    `params`: w, u and b are parameters (set in a scope); otherwise plain variables (fed)."""
    prog = program if program is not None else kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [T, B, D], dtype)
        h0 = g.create_var("h0", [B, H], dtype)
        declare = g.create_parameter if params else g.create_var
        w = declare("w", [H] if elementwise else [D, H], dtype)
        u = declare("u", [H] if elementwise else [H, H], dtype) if recurrent else None
        b = declare("b", [H], dtype) if bias else None
        times = kc.op.elementwise_mul if elementwise else kc.op.matmul_v2
        rnn = kc.layers.StaticRNN(name=name, reverse=reverse)
        with rnn.step():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(init=h0)
            pre = kc.op.elementwise_add(times(x_t, w), times(h_prev, u) if recurrent else h_prev)
            if bias:
                pre = kc.op.elementwise_add(pre, b)
            h_new = kc.op.tanh(pre)
            rnn.update_memory(h_prev, h_new)
            rnn.step_output(h_new)
        out = rnn()
    return StaticRnn(prog, out, rnn, h_prev, h_new)


def tanh_rnn_states(x, h0, w, u=None, b=None, *, reverse: bool = False, elementwise: bool = False) -> dict:
    """{t: h_t} from a NumPy loop in the inputs' dtype (u None: the state is added as it is)."""
    times = np.multiply if elementwise else np.matmul
    states, h = {}, h0
    for t in (range(len(x) - 1, -1, -1) if reverse else range(len(x))):
        pre = times(x[t], w) + (times(h, u) if u is not None else h)
        h = np.tanh(pre + b if b is not None else pre)
        states[t] = h
    return states
