"""The gradient of Paddle's fused rnn op (kernelcore/ops/rnn.py): rnn -> rnn_grad, with Paddle's slots; shape: none.

rnn_grad reads what the forward op kept in a training run (executor training=True, is_test false): its Reserve
value, an RnnReserve listing every step scope, each holding that step's h_prev, c_prev, gates, h, c (and mask).
It walks them newest first — the last layer first, each (layer, direction) pass from its last step back to its
first — computing the step's gate gradients from the kept values, and drops each step scope once done (Paddle's
ClearStepScopes). The weight GEMMs (weight_ih@GRAD, weight_hh@GRAD) and the layer input's gradient are done once per
pass over all timesteps, as the forward's input GEMM is: the walk stacks each step's gate gradients and h_prev by
timestep, so only the recurrent dh_prev GEMM runs per step. A gradient run after a forward run that kept nothing
is an error that says so.

Masking (SequenceLength) mirrors the forward: with m = 1 where t < length, h = m*h_cell + (1-m)*h_prev and
out_t = m*h_cell, so a padded step passes the state gradient through unchanged and gets none from Out.
"""
from __future__ import annotations

from ..errors import ProgramError
from ..ops.math import leading_sums
from ..ops.rnn import MODES, REFERENCE, RNN, RnnError, RnnReserve, RnnSteps, lstm_gate_scale
from ..ir.registry import In, Out, register_op
from ..transforms.backward import EMPTY_VAR, GradContext, no_grad, rule

no_grad("shape")  # kernelcore/ops/rnn.py registers it: a shape has no gradient

RNN_GRAD = register_op(
    "rnn_grad",
    "The gradient of rnn: walks the step scopes the forward op kept (its Reserve), newest first, and computes "
    "Input@GRAD, PreState@GRAD and WeightList@GRAD from Out@GRAD and State@GRAD; each step scope is dropped "
    "once its gradient is done. Needs a training run (training=True) of a forward op with is_test false.",
    inputs=[In("Input", "forward input: the sequence [T, B, input_size]"),
            In("PreState", "forward input: the initial states", duplicable=True),
            In("WeightList", "forward input: the weights and biases", duplicable=True),
            In("SequenceLength", "forward input: the valid lengths", dispensable=True),
            In("Out", "forward output: the outputs [T, B, D * hidden]"),
            In("Out@GRAD", "the gradient of Out"),
            In("State@GRAD", "the gradients of State (zeros when nothing reads the final states)",
               duplicable=True, dispensable=True),
            In("DropoutState", "forward output: the dropout masks", dispensable=True),
            In("Reserve", "forward output: the kept step scopes")],
    outputs=[Out("Input@GRAD", "the gradient of Input", dispensable=True),
             Out("PreState@GRAD", "the gradients of PreState", duplicable=True, dispensable=True),
             Out("WeightList@GRAD", "the gradients of WeightList", duplicable=True, dispensable=True)],
    attrs=list(RNN.attrs.values()))
RNN_GRAD.runs_in_parts, RNN_GRAD.needs_blas_threads = RNN.runs_in_parts, RNN.needs_blas_threads  # see ops/rnn.py


def _infer_grad(ic):
    for out_slot, in_slot in (("Input@GRAD", "Input"), ("PreState@GRAD", "PreState"),
                              ("WeightList@GRAD", "WeightList")):
        for i in range(min(len(ic.output_names(out_slot)), len(ic.input_names(in_slot)))):
            ic.set_output(out_slot, ic.shape(in_slot, i), ic.dtype(in_slot, i), i)


RNN_GRAD.infer_shape = _infer_grad


@rule("rnn")
def rnn_grad_rule(g: GradContext):
    if not g.output("Reserve"):
        raise ProgramError("this rnn op writes no Reserve output, which rnn_grad reads (the kept step scopes); "
                           "an rnn op that is to be differentiated must name a variable for Reserve")
    inputs = {"Input": g.input("Input"), "PreState": g.input("PreState"), "WeightList": g.input("WeightList"),
              "SequenceLength": g.input("SequenceLength"), "Out": g.output("Out"),
              "Out@GRAD": g.output_grad("Out"), "State@GRAD": g.output_grad("State"),
              "DropoutState": g.output("DropoutState"), "Reserve": g.output("Reserve")}
    outputs = {"Input@GRAD": g.input_grad("Input"), "PreState@GRAD": g.input_grad("PreState", drop_empty=False),
               "WeightList@GRAD": g.input_grad("WeightList", drop_empty=False)}
    return [g.grad_op("rnn_grad", inputs, outputs, copy_attrs=True)]


def _val(scope, name):
    v = scope.find_var(name)
    return v.value if v is not None else None


def lstm_candidate_columns(xp, dtype, hidden: int):
    """1 in the candidate gate's columns, 0 in the sigmoid gates' (i, f, g, o order): gates + this is each gate's
    factor beside (1 - gate) in its derivative, s (1 - s) for a sigmoid and (1 + g)(1 - g) for the tanh."""
    return lstm_gate_scale(xp, dtype, hidden) * dtype.type(2) - dtype.type(1)


def _lstm_cell_backward(xp, s, dh, dc, w_back, cand_cols, d_pre, up, steps=REFERENCE):
    """LSTM's step gradient written into d_pre ([B, 4 hidden], the step's row of d x_proj): every pass runs over
    the four gates at once, and the per-gate upstream factors go into `up` (a [B, 4 hidden] scratch array the
    pass's steps share), with no concatenation; w_back is step_matrix(W_hh). Returns (dh_prev through the cell,
    dc_prev)."""
    gates, c, c_prev = _val(s, "gates"), _val(s, "c"), _val(s, "c_prev")
    fused = steps.lstm_step_grad(xp, gates, c, c_prev, dh, dc, w_back, d_pre)
    if fused is not None:
        return fused
    one = dh.dtype.type(1)
    hs = dh.shape[1]
    i, f, g, o = gates[:, :hs], gates[:, hs:2 * hs], gates[:, 2 * hs:3 * hs], gates[:, 3 * hs:]
    xp.subtract(one, gates, out=d_pre)
    xp.add(gates, cand_cols, out=up)
    d_pre *= up  # each gate's activation derivative
    tc = xp.tanh(c)
    xp.multiply(dh, tc, out=up[:, 3 * hs:])  # o's upstream factor
    tc *= tc
    xp.subtract(one, tc, out=tc)
    tc *= o
    tc *= dh
    tc += dc  # tc is now the gradient of c: dc + dh o (1 - tanh(c)^2)
    xp.multiply(tc, g, out=up[:, :hs])
    xp.multiply(tc, c_prev, out=up[:, hs:2 * hs])
    xp.multiply(tc, i, out=up[:, 2 * hs:3 * hs])
    d_pre *= up
    tc *= f  # dc_prev
    return steps.recurrent_product(xp, d_pre, w_back), tc


def _cell_backward(xp, mode, s, dh, dc, w_back, b_hh, w_cand_t=None, steps=REFERENCE):
    """One step's gradients from the values its step scope kept, for GRU and the simple RNNs (LSTM:
    _lstm_cell_backward). dh, dc: the gradients of this step's (unmasked) h and c; w_back: step_matrix(W_hh);
    w_cand_t (GRU): recurrent_weight of W_hh's candidate rows. Returns (d x_proj, d (h_prev W_hh^T [+ b_hh]),
    dh_prev through the cell, dc_prev)."""
    one = dh.dtype.type(1)
    h_prev = _val(s, "h_prev")
    if mode == "GRU":
        gates = _val(s, "gates")
        fused = steps.gru_step_grad(xp, gates, h_prev, dh, w_cand_t, b_hh, w_back)
        if fused is not None:
            return (*fused, None)
        hs = dh.shape[1]
        r, z, cand = gates[:, :hs], gates[:, hs:2 * hs], gates[:, 2 * hs:]
        hc = steps.recurrent_product(xp, h_prev, w_cand_t) + b_hh[2 * hs:]  # recomputed: one small GEMM
        dpre_c = dh * (one - z) * (one - cand * cand)
        dpre_r = dpre_c * hc * r * (one - r)
        dpre_z = dh * (h_prev - cand) * z * (one - z)
        dx = xp.concatenate([dpre_r, dpre_z, dpre_c], axis=1)
        dhw = xp.concatenate([dpre_r, dpre_z, dpre_c * r], axis=1)
        return dx, dhw, dh * z + steps.recurrent_product(xp, dhw, w_back), None
    h = _val(s, "h")
    dpre = dh * (one - h * h) if mode == "RNN_TANH" else dh * (h > 0).astype(dh.dtype)
    return dpre, dpre, steps.recurrent_product(xp, dpre, w_back), None


@RNN_GRAD.kernel()
def rnn_grad(ctx, ins, attrs):
    return run_rnn_grad(REFERENCE, ctx, ins, attrs)


def run_rnn_grad(steps: RnnSteps, ctx, ins, attrs):
    """rnn_grad's kernel, its products and cells `steps`' (kernelcore/ops/rnn.py RnnSteps)."""
    x, pre, weights, seq_len, _out, d_out, d_state, _dropout_state, reserve = ins
    xp = ctx.xp
    mode, layers, H = attrs["mode"], attrs["num_layers"], attrs["hidden_size"]
    D = 2 if attrs["is_bidirec"] else 1
    G = MODES[mode]
    lstm = mode == "LSTM"
    if not isinstance(reserve, RnnReserve) or not reserve.scopes:
        raise RnnError("the forward rnn op kept no step scopes: run forward and backward in one run made with "
                       "training=True, with the rnn op's is_test false")
    T, B = x.shape[0], x.shape[1]
    weights = list(weights)
    half = 2 * layers * D
    dt = x.dtype
    one = dt.type(1)
    d_state = list(d_state or [])
    dh_final = d_state[0] if d_state and d_state[0] is not None else xp.zeros((layers * D, B, H), dtype=dt)
    dc_final = (d_state[1] if len(d_state) > 1 and d_state[1] is not None
                else xp.zeros((layers * D, B, H), dtype=dt)) if lstm else None
    d_weights = [None] * len(weights)
    d_h0, d_c0 = [None] * (layers * D), [None] * (layers * D)
    d_layer_out = d_out if d_out is not None else xp.zeros((T, B, D * H), dtype=dt)
    d_in = None
    # a fed sequence has no gradient to receive: its [T * B, G * hidden] x [G * hidden, input] GEMM is skipped
    wants_input_grad = any(n != EMPTY_VAR for n in ctx.output_names("Input@GRAD"))
    for layer in range(layers - 1, -1, -1):
        layer_in = reserve.layer_inputs[layer]
        n_in = layer_in.shape[2]
        d_in = None  # the sum over directions of each direction's input gradient
        for di in range(D - 1, -1, -1):
            k = layer * D + di
            w_ih, w_hh, b_hh = weights[2 * k], weights[2 * k + 1], weights[half + 2 * k + 1]
            w_cand_t = steps.recurrent_weight(xp, w_hh[2 * H:]) if mode == "GRU" else None
            w_back = steps.step_matrix(xp, w_hh)  # every step's d(pre-activations) @ W_hh
            cand_cols = lstm_candidate_columns(xp, dt, H) if lstm else None
            scratch = xp.empty((B, G * H), dtype=dt) if lstm else None
            pass_scopes = reserve.passes[(layer, di)]
            dy = d_layer_out[:, :, di * H:(di + 1) * H]
            dh, dc = dh_final[k], (dc_final[k] if lstm else None)
            dx_proj = xp.empty((T, B, G * H), dtype=dt)
            # the weight_hh gradient is one GEMM over every timestep after the walk: dhw and h_prev stacked by t
            dhw_all = dx_proj if mode != "GRU" else xp.empty((T, B, G * H), dtype=dt)  # LSTM/RNN: dhw is dx
            h_prev_all = xp.empty((T, B, H), dtype=dt)
            order = range(T) if di else range(T - 1, -1, -1)  # newest first: the forward order reversed
            for t in order:
                s = pass_scopes[t]
                m = _val(s, "mask")
                if m is None:
                    dh_cell, dc_cell = dh + dy[t], dc
                else:
                    dh_cell = (dh + dy[t]) * m
                    dc_cell = dc * m if lstm else None
                if lstm:
                    dh_prev, dc_prev = _lstm_cell_backward(xp, s, dh_cell, dc_cell, w_back, cand_cols, dx_proj[t],
                                                           scratch, steps)
                else:
                    dx, dhw, dh_prev, dc_prev = _cell_backward(xp, mode, s, dh_cell, dc_cell, w_back, b_hh, w_cand_t,
                                                               steps)
                    dx_proj[t] = dx
                    if dhw_all is not dx_proj:
                        dhw_all[t] = dhw
                h_prev_all[t] = _val(s, "h_prev")
                if m is not None:
                    dh_prev = dh_prev + dh * (one - m)
                    if lstm:
                        dc_prev = dc_prev + dc * (one - m)
                dh, dc = dh_prev, dc_prev
                ctx.drop_scope(s)  # done with this step (ClearStepScopes, newest first)
            flat = dx_proj.reshape(T * B, G * H)
            dhw_flat = dhw_all.reshape(T * B, G * H)
            # steps.matmul, not the packed GEMM of the steps and input projections: the left operand is a
            # transposed [G * H, T * B] view, which that GEMM reads a cache line per element (a 2-layer LSTM's
            # training step took 115 ms with it, 83 without)
            d_weights[2 * k] = steps.matmul(xp, flat.T, layer_in.reshape(T * B, n_in))
            d_weights[2 * k + 1] = steps.matmul(xp, dhw_flat.T, h_prev_all.reshape(T * B, H))
            d_weights[half + 2 * k] = leading_sums(xp, flat, 1)
            d_weights[half + 2 * k + 1] = leading_sums(xp, dhw_flat, 1) if mode == "GRU" else \
                d_weights[half + 2 * k].copy()
            if layer or wants_input_grad:
                d_dir = steps.matmul(xp, flat, w_ih).reshape(T, B, n_in)
                d_in = d_dir if d_in is None else d_in + d_dir
            d_h0[k], d_c0[k] = dh, dc
        scale = reserve.dropout_masks[layer] if layer < len(reserve.dropout_masks) else None
        if scale is not None and d_in is not None:
            d_in = d_in * scale
        d_layer_out = d_in
    for s in reserve.scopes:  # anything not walked (an interrupted run) goes too
        if not s.dropped:
            ctx.drop_scope(s)
    var = ctx.scope.find_var(ctx.input_names("Reserve")[0])
    if var is not None:
        var.value = None  # the old RnnReserve (a trace may hold it) is left as it was
    names = ctx.output_names("PreState@GRAD")
    d_pre = [xp.stack(d_h0)] + ([xp.stack(d_c0)] if lstm else [])
    d_pre = [v if k < len(names) and names[k] != EMPTY_VAR else None for k, v in enumerate(d_pre)]
    wnames = ctx.output_names("WeightList@GRAD")
    d_weights = [v if k < len(wnames) and wnames[k] != EMPTY_VAR else None for k, v in enumerate(d_weights)]
    return (d_in, d_pre, d_weights)
