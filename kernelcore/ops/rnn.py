"""Paddle's fused `rnn` op (what paddle.nn.LSTM / GRU / SimpleRNN write), run timestep by timestep; and `shape`.

Slots, attributes, the weight-list order and the gate order are Paddle's (measured in
tests/paddle_oracle/NOTES.md, "The fused rnn op"):
  Input [T, B, input_size] (time-major; the layers transpose batch-first input with transpose2),
  PreState [h0] or, for LSTM, [h0, c0], each [num_layers * D, B, hidden] (D = 2 when is_bidirec),
  WeightList: every (layer, direction)'s [weight_ih, weight_hh] in order, then every one's
  [bias_ih, bias_hh]; weight_ih [G * hidden, in], weight_hh [G * hidden, hidden], biases [G * hidden], with
  G = 4 (LSTM: gates i, f, g, o), 3 (GRU: r, z, c) or 1 (RNN_TANH, RNN_RELU),
  SequenceLength [B] int (optional): steps t >= length write zeros to Out and carry the state unchanged,
  Out [T, B, D * hidden] (directions concatenated), State like PreState: the last state of each
  (layer, direction).

A control-flow kernel without a sub-block. Each (layer, direction, timestep) runs in its own step scope, a kid
of the op's scope, reported as scope_push / step_begin / step_end events with the timestep. The step scope is
given (bind_var, so traces and time travel see the values) `x_proj` (weight_ih x_t + biases, computed for every
timestep of a layer with one GEMM before its steps), `h_prev`, `c_prev` (LSTM) and `mask` ([B, 1], with
SequenceLength); the step itself is reported as one op_run of an `lstm_cell` / `gru_cell` / `rnn_tanh_cell` /
`rnn_relu_cell` step (block and op index: the rnn op's) that writes `gates` (after their activations: LSTM
i, f, g, o; GRU r, z, c), `h` and `c` (LSTM) into the step scope. Without SequenceLength an LSTM step's `h` is
its direction's row of Out (a view, written once). Under a debugger the kernel pauses before
each step (ExecContext.inner_step), so a session steps through a Paddle LSTM one timestep at a time.

Scopes: inference keeps at most two step scopes alive (the running one and the one before it, as recurrent
does). In a run nobody observes (no trace, no debugger), where those scopes could never be seen, an LSTM pass
without SequenceLength, in a run that keeps no step scopes, may run its steps in one call instead
(RnnSteps.lstm_pass: kernelcore/native/rnn.py's fast variant has one in C, the same operations in the same order,
so the same values, without the per-step scopes and the activated gates). A training run (executor training=True) of an op with is_test false keeps
every step scope for rnn_grad, listed in the Reserve variable's value (an RnnReserve); the op's next run drops
them.

Dropout (dropout_prob > 0, training run, is_test false) zeroes the input of layers 1.. with Paddle's
upscale_in_train rule; DropoutState holds the uint8 masks of the last run (empty without dropout).
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import KernelcoreError
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, larger_than, one_of, register_op

MODES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
CELL_TYPES = {"LSTM": "lstm_cell", "GRU": "gru_cell", "RNN_TANH": "rnn_tanh_cell", "RNN_RELU": "rnn_relu_cell"}
_now = time.perf_counter_ns


class RnnError(KernelcoreError, ValueError):
    """The rnn op was given inputs that do not fit its attributes (the executor adds the op)."""


# ---------------------------------------------------------------------------------------------------------
# rnn
def _infer_rnn(ic):
    mode = ic.attr("mode") or "LSTM"
    if mode not in MODES:
        ic.fail(f"mode must be one of {list(MODES)}, got {mode!r}")
    layers = ic.attr("num_layers") or 1
    d = 2 if ic.attr("is_bidirec") else 1
    hidden = ic.attr("hidden_size")
    n_states = 2 if mode == "LSTM" else 1
    if len(ic.input_names("PreState")) != n_states:
        ic.fail(f"mode {mode} takes {n_states} PreState tensor(s), got {len(ic.input_names('PreState'))}")
    if len(ic.input_names("WeightList")) != 4 * layers * d:
        ic.fail(f"WeightList must hold 4 * num_layers * directions = {4 * layers * d} tensors "
                f"(num_layers {layers}, {d} direction(s)), got {len(ic.input_names('WeightList'))}")
    if len(ic.output_names("State")) not in (0, n_states):
        ic.fail(f"mode {mode} writes {n_states} State tensor(s), the op names {len(ic.output_names('State'))}")
    x = ic.shape("Input")
    if len(x) != 3:
        ic.fail(f"Input must be 3-D [T, B, input_size] (time-major), got {list(x)}")
    if x[2] >= 0 and ic.attr("input_size") is not None and x[2] != ic.attr("input_size"):
        ic.fail(f"Input's last dim is {x[2]} but input_size is {ic.attr('input_size')}")
    dt = ic.dtype("Input")
    ic.set_output("Out", [x[0], x[1], d * hidden], dt)
    for i in range(n_states):
        ic.set_output("State", [layers * d, x[1], hidden], dt, i)


RNN = register_op(
    "rnn",
    "A multi-layer, optionally bidirectional LSTM / GRU / simple RNN over a time-major sequence (Paddle's fused "
    "rnn op, written by paddle.nn.LSTM, GRU and SimpleRNN). Each (layer, direction, timestep) runs in its own "
    "step scope holding that step's x_proj, h_prev, c_prev, gates, h and c; see kernelcore/ops/rnn.py.",
    inputs=[In("Input", "the sequence, time-major [T, B, input_size]"),
            In("PreState", "the initial states [num_layers * D, B, hidden]: [h0], or [h0, c0] for LSTM",
               duplicable=True),
            In("WeightList", "every (layer, direction)'s weight_ih, weight_hh, then every one's bias_ih, bias_hh",
               duplicable=True),
            In("SequenceLength", "int [B]: the valid length of each sequence", dispensable=True)],
    outputs=[Out("DropoutState", "uint8: the dropout masks between layers (training only)", dispensable=True,
                 intermediate=True),
             Out("Reserve", "what rnn_grad reads: the kept step scopes (training runs only)", dispensable=True,
                 intermediate=True),
             Out("Out", "the last layer's outputs [T, B, D * hidden], directions concatenated"),
             Out("State", "the final states, shaped like PreState", duplicable=True)],
    attrs=[Attr("dropout_prob", A.FLOAT, "dropout between layers while training (upscale_in_train)", 0.0,
                checks=(Check("in [0, 1)", lambda v: 0.0 <= v < 1.0),)),
           Attr("is_bidirec", A.BOOLEAN, "run a backward direction too", False),
           Attr("input_size", A.INT, "the size of Input's last dim", 10, checks=(larger_than(0),)),
           Attr("hidden_size", A.INT, "the size of each state", 100, checks=(larger_than(0),)),
           Attr("num_layers", A.INT, "stacked layers", 1, checks=(larger_than(0),)),
           Attr("mode", A.STRING, "the cell: LSTM, GRU, RNN_TANH or RNN_RELU", "LSTM", checks=(one_of(*MODES),)),
           Attr("seed", A.INT, "the dropout seed (0: the executor's generator)", 0),
           Attr("is_test", A.BOOLEAN, "inference: no dropout, no step scopes kept for rnn_grad", False)],
    infer_shape=_infer_rnn)
# Without its fast variant the per-step products are OpenBLAS's small ones, which gain from its own threads and
# would lose to the hand-off of parts; kernelcore/native/rnn.py says otherwise where its C steps are there
RNN.runs_in_parts, RNN.needs_blas_threads = False, True


class CellStep:
    """How one timestep of an rnn op shows itself to the debugger and the trace: the fields of a prepared op
    that pauses and op_run events read. Its block and index are the rnn op's (it has no block of its own)."""

    __slots__ = ("type", "block", "idx", "kernel_name", "in_names", "out_names", "in_pairs", "out_pairs", "detail")

    def __init__(self, op, mode: str, masked: bool, place_kind: str):
        self.type, self.block, self.idx = CELL_TYPES[mode], op.block, op.idx
        self.detail = None  # the pass running now ("layer 1 bwd"): a position names it, as layers repeat t
        self.kernel_name = f"rnn.{self.type}[{place_kind}]"
        lstm = mode == "LSTM"
        ins = [("XProj", "x_proj"), ("HPrev", "h_prev")] + ([("CPrev", "c_prev")] if lstm else []) + \
            ([("Mask", "mask")] if masked else [])
        outs = ([("Gates", "gates")] if mode in ("LSTM", "GRU") else []) + [("H", "h")] + \
            ([("C", "c")] if lstm else [])
        self.in_pairs, self.out_pairs = tuple(ins), tuple(outs)
        self.in_names = [n for _, n in ins]
        self.out_names = [n for _, n in outs]

    def __repr__(self) -> str:
        return f"<{self.type} step of rnn op (block {self.block}, op #{self.idx})>"


class RnnReserve:
    """The Reserve value of a training run: the kept step scopes and what rnn_grad needs besides them."""

    __slots__ = ("scopes", "passes", "layer_inputs", "dropout_masks")

    def __init__(self):
        self.scopes = []         # every step scope, in execution order
        self.passes = {}         # (layer, direction) -> [step scope for t = 0 .. T-1]
        self.layer_inputs = []   # the input of each layer (after dropout)
        self.dropout_masks = []  # layer -> keep mask / (1 - p) (None for layer 0 or without dropout)

    def __len__(self) -> int:
        return len(self.scopes)

    def __iter__(self):
        return iter(self.scopes)


def sigmoid(xp, x):
    return (xp.tanh(x * x.dtype.type(0.5)) + x.dtype.type(1)) * x.dtype.type(0.5)  # no overflow for large |x|


class RnnSteps:
    """The products and cells an rnn pass and its gradient are made of, over xp: the reference. The kernels
    (`rnn_kernel`, kernelcore/grad/rnn.py's `rnn_grad_kernel`) reach them through the object they are made with,
    so kernelcore/native/rnn.py's subclass puts its packed GEMM, its LSTM step, backward and whole pass in C, and
    the pass-wide products in parts, in their place."""

    def recurrent_weight(self, xp, w_hh, gates: int = 1):
        """W_hh^T, made once per (layer, direction) for every timestep's recurrent_product, laid out row-major. A
        plain row-major product h @ W^T (OpenBLAS's NN kernels) was the fastest of the three NumPy ways measured,
        batch 32, hidden 256, one thread, on an Intel Xeon (AVX-512): 151 us a step, where h @ w_hh.T (a
        transposed view) took 228 and (w_hh @ h^T)^T 168 (two threads: 88, 122, 106; batch 8: 67, 138, 73).
        gates: how many gates' columns W^T holds, for a subclass that packs each gate's apart."""
        return xp.ascontiguousarray(w_hh.T)

    def step_matrix(self, xp, b, groups: int = 1):
        """b [k, n] made ready for many products a @ b whose `a` has a few rows (recurrent_product): b itself."""
        return b

    def recurrent_product(self, xp, a, w, add=None):
        """a @ W (+ add), a fresh C-ordered array, for step_matrix's (or recurrent_weight's) W."""
        out = a @ w
        if add is not None:
            out += add
        return out

    def matmul(self, xp, a, b):
        """A product over a whole pass (the input projections, the weight gradients)."""
        return xp.matmul(a, b)

    def input_projection(self, xp, flat_in, w_ih, bias):
        """flat_in [T * B, input] @ W_ih^T + bias: every timestep's input projection in one GEMM, the bias added
        in place (a fresh [T * B, G * H] sum would cost 2 ms of page faults a layer at a 2-layer LSTM's size)."""
        x_proj = self.matmul(xp, flat_in, w_ih.T)
        x_proj += bias
        return x_proj

    def lstm_step(self, xp, x_proj, h_prev, c_prev, w_hh_t, scale_shift, h_out):
        """One LSTM step: (gates, h, c); see cell_forward."""
        # in place on the fresh GEMM result (ours, x_proj added): it becomes the gates array, with no
        # concatenation. Each pass runs over all four gates at once; on the rnn op's Out row where given, so h
        # needs no copy there
        g = self.recurrent_product(xp, h_prev, w_hh_t, add=x_proj)
        hs = g.shape[1] // 4
        scale, shift = scale_shift or (lstm_gate_scale(xp, g.dtype, hs), lstm_gate_shift(xp, g.dtype, hs))
        g *= scale
        xp.tanh(g, out=g)
        g *= scale
        g += shift  # i, f, o: sigmoid; the candidate: tanh
        c = g[:, hs:2 * hs] * c_prev
        c += g[:, :hs] * g[:, 2 * hs:3 * hs]
        o = g[:, 3 * hs:]
        h = xp.tanh(c, out=h_out) if h_out is not None else xp.tanh(c)
        h *= o
        return g, h, c

    def gru_step(self, xp, x_proj, h_prev, w_hh_t, b_hh):
        """One GRU step: (gates, h), gates r, z (sigmoid) and the candidate c (tanh) side by side. x_proj holds
        x_t weight_ih^T + bias_ih only: bias_hh is added to the recurrent product, as the reset gate scales the
        candidate's part of it."""
        hw = self.recurrent_product(xp, h_prev, w_hh_t)
        hw += b_hh
        hs = hw.shape[1] // 3
        rz = sigmoid(xp, x_proj[:, :2 * hs] + hw[:, :2 * hs])
        r, z = rz[:, :hs], rz[:, hs:]
        cand = xp.tanh(x_proj[:, 2 * hs:] + r * hw[:, 2 * hs:])
        h = (h_prev - cand) * z + cand
        return xp.concatenate([rz, cand], axis=1), h

    def lstm_pass(self, xp, x_proj, h0, c0, w_hh_t, out, reverse: bool):
        """A whole unobserved LSTM pass in one call, writing `out` and returning the last c; None where there is
        none (here: the kernel steps)."""
        return None

    def gru_step_grad(self, xp, gates, h_prev, dh, w_cand_t, b_hh, w_back):
        """A GRU step's gradient in one call, (d x_proj, d (h_prev W_hh^T + b_hh), dh_prev); None where there is
        none (here: kernelcore/grad/rnn.py's _cell_backward)."""
        return None

    def lstm_step_grad(self, xp, gates, c, c_prev, dh, dc, w_back, d_pre):
        """An LSTM step's gradient in one call, (dh_prev, dc_prev) with d_pre written; None where there is none
        (here: kernelcore/grad/rnn.py's passes)."""
        return None


REFERENCE = RnnSteps()
recurrent_weight, step_matrix = REFERENCE.recurrent_weight, REFERENCE.step_matrix
recurrent_product, input_projection = REFERENCE.recurrent_product, REFERENCE.input_projection


def lstm_gate_scale(xp, dtype, hidden: int):
    """The per-column factor of LSTM's gate columns i, f, g, o: 0.5 for the sigmoid gates, 1 for the candidate.
    sigmoid(z) = tanh(z * 0.5) * 0.5 + 0.5, so one tanh over all four gates does both activations: the gates
    times this factor, tanh, times it again, plus lstm_gate_shift. Scaling by a power of two is exact, so the
    values are those of sigmoid() and tanh applied to each gate's columns alone."""
    scale = xp.ones(4 * hidden, dtype=dtype)
    scale[:2 * hidden] = 0.5
    scale[3 * hidden:] = 0.5
    return scale


def lstm_gate_shift(xp, dtype, hidden: int):
    """0.5 for the sigmoid gates' columns, 0 for the candidate's (1 - lstm_gate_scale): see there."""
    return dtype.type(1) - lstm_gate_scale(xp, dtype, hidden)


def cell_forward(xp, mode: str, x_proj, h_prev, c_prev, w_hh_t, b_hh, scale_shift=None, h_out=None,
                 steps=REFERENCE):
    """One step of one (layer, direction): returns (gates, h, c); gates/c are None where the mode has none.
    x_proj = x_t weight_ih^T + bias_ih (+ bias_hh for LSTM and the simple RNNs, which add it there); w_hh_t from
    recurrent_weight. LSTM: scale_shift is (lstm_gate_scale, lstm_gate_shift), made once per pass (made here
    when None); h_out, where given, is the [B, hidden] array h is written into (the op's Out[t])."""
    if mode == "LSTM":
        return steps.lstm_step(xp, x_proj, h_prev, c_prev, w_hh_t, scale_shift, h_out)
    if mode == "GRU":
        gates, h = steps.gru_step(xp, x_proj, h_prev, w_hh_t, b_hh)
        return gates, h, None
    pre = steps.recurrent_product(xp, h_prev, w_hh_t, add=x_proj)
    h = xp.tanh(pre) if mode == "RNN_TANH" else xp.maximum(pre, pre.dtype.type(0))
    return None, h, None


def _check_inputs(x, pre, weights, seq_len, attrs):
    mode, layers, hidden = attrs["mode"], attrs["num_layers"], attrs["hidden_size"]
    d = 2 if attrs["is_bidirec"] else 1
    g = MODES[mode]
    if x is None or getattr(x, "ndim", 0) != 3:
        got = "no value" if x is None else f"shape {list(getattr(x, 'shape', ()))}"
        raise RnnError(f"Input must be 3-D [T, B, input_size] (time-major), got {got}")
    T, B, n_in = x.shape
    if n_in != attrs["input_size"]:
        raise RnnError(f"Input's last dim is {n_in} but input_size is {attrs['input_size']}")
    n_states = 2 if mode == "LSTM" else 1
    if len(pre) != n_states:
        raise RnnError(f"mode {mode} takes {n_states} PreState tensor(s), got {len(pre)}")
    for k, s in enumerate(pre):
        want = (layers * d, B, hidden)
        if s is None or tuple(s.shape) != want:
            raise RnnError(f"PreState[{k}] must be [num_layers * directions, B, hidden_size] = {list(want)}, got "
                           f"{'no value' if s is None else list(s.shape)}")
    if len(weights) != 4 * layers * d:
        raise RnnError(f"WeightList must hold 4 * num_layers * directions = {4 * layers * d} tensors, got "
                       f"{len(weights)}")
    half = 2 * layers * d
    for layer in range(layers):
        in_size = n_in if layer == 0 else d * hidden
        for di in range(d):
            k = layer * d + di
            for j, (w, want) in enumerate(((weights[2 * k], (g * hidden, in_size)),
                                           (weights[2 * k + 1], (g * hidden, hidden)),
                                           (weights[half + 2 * k], (g * hidden,)),
                                           (weights[half + 2 * k + 1], (g * hidden,)))):
                name = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")[j]
                if w is None or tuple(w.shape) != want:
                    pos = 2 * k + j if j < 2 else half + 2 * k + j - 2
                    raise RnnError(f"WeightList[{pos}] ({name} of layer {layer}, "
                                   f"{'backward' if di else 'forward'}) must be {list(want)} for mode {mode}, got "
                                   f"{'no value' if w is None else list(w.shape)}")
    if seq_len is not None and (getattr(seq_len, "ndim", 0) != 1 or seq_len.shape[0] != B):
        raise RnnError(f"SequenceLength must be [B] = [{B}], got {list(getattr(seq_len, 'shape', ()))}")
    return T, B, d, g


def _drop_previous(ctx) -> None:
    """Drop the step scopes a previous training run of this op kept (listed in its Reserve value)."""
    names = ctx.output_names("Reserve")
    var = ctx.scope.find_var(names[0]) if names else None
    old = var.value if var is not None else None
    if isinstance(old, RnnReserve):
        for s in old.scopes:
            if not s.dropped:
                ctx.drop_scope(s)
        var.value = None


def _create(ctx, scope, names) -> None:
    for n in names:
        scope.var(n)
    run = ctx.run
    if run.observers:
        for n in names:
            run.emit_var_create(scope.id, ctx.block, n)


@RNN.kernel()
def rnn(ctx, ins, attrs):
    return (yield from run_rnn(REFERENCE, ctx, ins, attrs))


def run_rnn(steps: RnnSteps, ctx, ins, attrs):
    """The rnn op's kernel (a generator: it pauses between steps under a debugger), its products and cells
    `steps`'."""
    x, pre, weights, seq_len = ins
    pre, weights = list(pre or []), list(weights or [])
    T, B, D, G = _check_inputs(x, pre, weights, seq_len, attrs)
    xp = ctx.xp
    mode, layers, H = attrs["mode"], attrs["num_layers"], attrs["hidden_size"]
    lstm = mode == "LSTM"
    keep = ctx.training and not attrs["is_test"]
    p = attrs["dropout_prob"] if (ctx.training and not attrs["is_test"]) else 0.0
    _drop_previous(ctx)
    reserve = RnnReserve() if keep else None
    dt = x.dtype
    masks = None
    if seq_len is not None:  # [T, B, 1]: 1 where t < length
        masks = (xp.arange(T)[:, None] < seq_len.astype(xp.int64)[None, :]).astype(dt)[:, :, None]
    step = CellStep(ctx.op, mode, masks is not None, ctx.place.kind)
    silent = not ctx.run.observers and not ctx.run.pausing
    half = 2 * layers * D
    last_h, last_c, drop_masks = [None] * (layers * D), [None] * (layers * D), []
    layer_in = x
    live = []
    rng = ctx.rng(attrs["seed"]) if p > 0.0 and layers > 1 else None  # one generator for every layer
    try:
        for layer in range(layers):
            if layer and p > 0.0:
                u = rng.random(layer_in.shape, dtype=np.float32) if ctx.place.kind == "cpu" else \
                    rng.random_sample(size=layer_in.shape, dtype=np.float32)
                keep_mask = u >= np.float32(p)
                drop_masks.append(keep_mask.astype(np.uint8))
                scale = keep_mask.astype(dt) / dt.type(1.0 - p)
                layer_in = layer_in * scale
                if reserve is not None:
                    reserve.dropout_masks.append(scale)
            elif reserve is not None:
                reserve.dropout_masks.append(None)
            if reserve is not None:
                reserve.layer_inputs.append(layer_in)
            n_in = layer_in.shape[2]
            flat_in = layer_in.reshape(T * B, n_in)
            outs = []
            for di in range(D):
                k = layer * D + di
                w_ih, w_hh = weights[2 * k], weights[2 * k + 1]
                b_ih, b_hh = weights[half + 2 * k], weights[half + 2 * k + 1]
                bias = b_ih if mode == "GRU" else b_ih + b_hh  # GRU adds bias_hh inside r * (...)
                x_proj = steps.input_projection(xp, flat_in, w_ih, bias).reshape(T, B, G * H)
                w_hh_t = steps.recurrent_weight(xp, w_hh, 4 if lstm else 1)
                out = xp.empty((T, B, H), dtype=dt)
                h, c = pre[0][k], (pre[1][k] if lstm else None)
                # nobody can see a step scope of this run (no trace, no debugger; an inference run drops each one
                # after the next step): the pass's steps in one call where `steps` has one, the same values
                whole = steps.lstm_pass(xp, x_proj, h, c, w_hh_t, out, bool(di)) \
                    if silent and lstm and masks is None and reserve is None and T else None
                if whole is not None:
                    last_h[k], last_c[k] = out[0] if di else out[T - 1], whole
                    outs.append(out)
                    continue
                scale_shift = (lstm_gate_scale(xp, dt, H), lstm_gate_shift(xp, dt, H)) if lstm else None
                what = f"rnn step (layer {layer}, {'backward' if di else 'forward'})"
                step.detail = f"layer {layer} {'bwd' if di else 'fwd'}"
                kept_pass = [None] * T if reserve is not None else None
                prev = None
                for i in range(T):
                    t = T - 1 - i if di else i
                    s = ctx.new_scope(what, t)
                    live.append(s)
                    ctx.step_event("step_begin", t, s)
                    given = [x_proj[t], h] + ([c] if lstm else []) + ([masks[t]] if masks is not None else [])
                    ctx.bind_vars(s, step.in_names, given)  # x_proj, h_prev (, c_prev) (, mask)
                    _create(ctx, s, step.out_names)
                    pause = ctx.inner_step(step, s, t)
                    if pause is not None:
                        yield pause
                    t0 = _now()
                    gates, h_new, c_new = cell_forward(xp, mode, x_proj[t], h, c, w_hh_t, b_hh, scale_shift,
                                                       out[t] if masks is None and lstm else None, steps)
                    if masks is not None:
                        m = masks[t]
                        out[t] = h_new * m
                        h_new = h_new * m + h * (dt.type(1) - m)
                        if lstm:
                            c_new = c_new * m + c * (dt.type(1) - m)
                    elif not lstm:
                        out[t] = h_new
                    results = ([gates] if gates is not None else []) + [h_new] + ([c_new] if lstm else [])
                    for name, v in zip(step.out_names, results):
                        s.find_var(name).value = v
                    if ctx.run.observers:
                        ctx.step_ran(step, s, t, t0, given + results)
                    h, c = h_new, c_new
                    ctx.step_event("step_end", t, s)
                    if reserve is not None:
                        reserve.scopes.append(s)
                        kept_pass[t] = s
                    elif prev is not None:
                        ctx.drop_scope(prev)  # s holds what it needs of prev (h_prev, c_prev)
                        live.remove(prev)
                    prev = s
                if reserve is None and prev is not None:
                    ctx.drop_scope(prev)
                    live.remove(prev)
                elif reserve is not None:
                    reserve.passes[(layer, di)] = kept_pass
                last_h[k], last_c[k] = h, c
                outs.append(out)
            layer_in = outs[0] if D == 1 else xp.concatenate(outs, axis=2)
    except BaseException:
        # a failing step leaves its scopes (for debugging); list them so the next run drops them
        names = ctx.output_names("Reserve")
        var = ctx.scope.find_var(names[0]) if names else None
        if var is not None:
            r = RnnReserve()
            r.scopes = [s for s in live if not s.dropped]  # live: every step scope not dropped yet
            var.value = r
        raise
    states = [xp.stack(last_h)] + ([xp.stack(last_c)] if lstm else [])
    dropout_state = xp.stack(drop_masks) if drop_masks else xp.zeros((0,), dtype=np.uint8)
    # without kept scopes Reserve is an empty RnnReserve: rnn_grad then says why it cannot run
    return (dropout_state, reserve if reserve is not None else RnnReserve(), layer_in, states)
