"""The user-level API: layers that build ops into the current program, after Paddle's static layers (kc.layers).

Layers that create parameters declare them through parameters.py; the layer is named `fc_0` and its outputs
`fc_0.tmp_0`, `fc_0.tmp_1`, ... as Paddle names them. Here: data, fc, embedding, the losses, mean, accuracy,
dropout, and simple_rnn / lstm on StaticRNN (control_flow_layers.py, with IfElse).
"""
from __future__ import annotations

import math

from ..errors import ProgramError
from ..ir.program import Variable, default_main_program
from .control_flow_layers import IfElse, StaticRNN
from .parameters import (ConstantInitializer, Initializer, NormalInitializer, ParamAttr, UniformInitializer,
                         XavierInitializer, create_parameter)

__all__ = ["StaticRNN", "IfElse", "ParamAttr", "Initializer", "ConstantInitializer", "UniformInitializer",
           "NormalInitializer", "XavierInitializer", "data", "create_parameter", "fc", "embedding", "cross_entropy",
           "softmax_with_cross_entropy", "mean", "accuracy", "dropout", "simple_rnn", "lstm", "sequence_last"]


def _layer_name(kind: str, name: str | None) -> str:
    return name or default_main_program().unique_name(kind)


def _tmp(layer: str) -> str:
    """A fresh output name `<layer>.tmp_N` in the current block."""
    return default_main_program().unique_name(f"{layer}.tmp")


def _out(op_type: str, inputs: dict, attrs: dict | None = None, layer: str | None = None,
         slot: str = "Out", extra_outputs: dict | None = None) -> Variable:
    """Append one op to the current block with a fresh `<layer>.tmp_N` for `slot`; return that variable."""
    block = default_main_program().current_block()
    name = _tmp(layer or op_type)
    outputs = {slot: [name], **(extra_outputs or {})}
    block.append_op(op_type, inputs=inputs, outputs=outputs, attrs=attrs or {})
    return block.var(name)


def _activate(x: Variable, act: str | None, layer: str) -> Variable:
    if act is None:
        return x
    attrs = {"axis": -1} if act == "softmax" else {}
    return _out(act, {"X": [x]}, attrs, layer)


def data(name: str, shape, dtype="float32", *, stop_gradient: bool = True) -> Variable:
    """An input variable of the main program's global block (fed by name at run time); -1 = any size."""
    block = default_main_program().global_block()
    return block.create_var(name, [int(d) for d in shape], dtype, stop_gradient=stop_gradient)


def fc(input: Variable, size: int, num_flatten_dims: int = 1, act: str | None = None, name: str | None = None,
       param_attr=None, bias_attr=None) -> Variable:
    """Out = act(input @ W + b), Paddle's static fc: `mul` (input flattened at num_flatten_dims) then
    `elementwise_add`, then the activation op (relu, sigmoid, tanh, softmax, ...). W ([in, size], Xavier
    uniform) is `fc_N.w_0`, b ([size], zeros) `fc_N.b_0`; bias_attr=False leaves b out."""
    if not isinstance(input, Variable):
        raise TypeError(f"fc takes a Variable input, got {type(input).__name__}")
    shape = input.shape
    if shape is None or len(shape) <= num_flatten_dims:
        raise ProgramError(f"fc: input {input.name!r} has shape {list(shape) if shape else None}; it needs more "
                           f"than num_flatten_dims={num_flatten_dims} dims")
    in_features = math.prod(shape[num_flatten_dims:]) if all(d >= 0 for d in shape[num_flatten_dims:]) else -1
    if in_features < 0:
        raise ProgramError(f"fc: input {input.name!r} {list(shape)}: the dims after num_flatten_dims must be known")
    layer = _layer_name("fc", name)
    dtype = input.dtype_name or "float32"
    w = create_parameter([in_features, size], dtype, param_attr, XavierInitializer(), layer, "w")
    out = _out("mul", {"X": [input], "Y": [w]}, {"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1}, layer)
    battr = ParamAttr.of(bias_attr)
    if battr is not None:
        b = create_parameter([size], dtype, battr, ConstantInitializer(0.0), layer, "b")
        out = _out("elementwise_add", {"X": [out], "Y": [b]}, {"axis": num_flatten_dims}, layer)
    return _activate(out, act, layer)


def embedding(input: Variable, size, padding_idx: int | None = None, param_attr=None, dtype="float32",
              name: str | None = None) -> Variable:
    """Rows of a [vocab, dim] table (`embedding_N.w_0`, Xavier uniform) picked by the int ids in `input`:
    a `lookup_table_v2` op; Out is input.shape + [dim]. A negative padding_idx counts from the end."""
    vocab, dim = (int(d) for d in size)
    layer = _layer_name("embedding", name)
    w = create_parameter([vocab, dim], dtype, param_attr, XavierInitializer(), layer, "w")
    pad = -1 if padding_idx is None else (padding_idx if padding_idx >= 0 else vocab + padding_idx)
    return _out("lookup_table_v2", {"Ids": [input], "W": [w]}, {"padding_idx": pad}, layer)


def cross_entropy(input: Variable, label: Variable, soft_label: bool = False, ignore_index: int = -100) -> Variable:
    """-log(input[label]) per row (input: probabilities, e.g. a softmax); a `cross_entropy` op."""
    return _out("cross_entropy", {"X": [input], "Label": [label]},
                {"soft_label": soft_label, "ignore_index": ignore_index}, "cross_entropy", slot="Y")


def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = False,
                               ignore_index: int = -100, axis: int = -1, return_softmax: bool = False):
    """Softmax and cross entropy fused (stable on large logits). Returns the loss ([N, 1]), and the
    softmax too with return_softmax=True."""
    block = default_main_program().current_block()
    sm = _tmp("softmax_with_cross_entropy")
    loss = _out("softmax_with_cross_entropy", {"Logits": [logits], "Label": [label]},
                {"soft_label": soft_label, "ignore_index": ignore_index, "axis": axis},
                "softmax_with_cross_entropy", slot="Loss", extra_outputs={"Softmax": [sm]})
    return (loss, block.var(sm)) if return_softmax else loss


def mean(x: Variable) -> Variable:
    """The mean of every element of x, a 0-d tensor (a `mean` op)."""
    return _out("mean", {"X": [x]}, {}, "mean")


def accuracy(input: Variable, label: Variable, k: int = 1) -> Variable:
    """Top-k accuracy of scores `input` [N, C] against int64 labels [N, 1]: `top_k` then `accuracy`."""
    block = default_main_program().current_block()
    layer = "accuracy"
    values, indices = _tmp(layer), _tmp(layer)
    block.append_op("top_k", inputs={"X": [input]}, outputs={"Out": [values], "Indices": [indices]}, attrs={"k": k})
    acc, correct, total = _tmp(layer), _tmp(layer), _tmp(layer)
    block.append_op("accuracy", inputs={"Out": [values], "Indices": [indices], "Label": [label]},
                    outputs={"Accuracy": [acc], "Correct": [correct], "Total": [total]})
    return block.var(acc)


def dropout(x: Variable, dropout_prob: float, is_test: bool | None = None, seed: int | None = None,
            dropout_implementation: str = "downgrade_in_infer", name: str | None = None) -> Variable:
    """A `dropout` op. is_test=None (or False): the run decides — units are dropped only in runs made with
    training=True; is_test=True: never drop. seed: a fixed seed (fix_seed) for reproducible masks."""
    layer = _layer_name("dropout", name)
    block = default_main_program().current_block()
    mask = _tmp(layer)
    attrs = {"dropout_prob": float(dropout_prob), "is_test": bool(is_test),
             "dropout_implementation": dropout_implementation}
    if seed is not None:
        attrs.update(fix_seed=True, seed=int(seed))
    out = _out("dropout", {"X": [x]}, attrs, layer, extra_outputs={"Mask": [mask]})
    block.var(mask).set_stop_gradient(True)
    return out


# -- recurrent layers on StaticRNN ------------------------------------------------------------------------
def _time_major(x: Variable, what: str) -> tuple[int, int]:
    shape = x.shape
    if shape is None or len(shape) != 3 or shape[2] < 0:
        raise ProgramError(f"{what}: input {x.name!r} must be time-major [T, B, D] with D known, got "
                           f"{list(shape) if shape is not None else None}")
    return shape[0], shape[2]


def _project(x: Variable, w: Variable, b: Variable | None, layer: str) -> Variable:
    """x @ w (+ b) for every timestep at once, outside the step block: one matmul instead of T."""
    out = _out("matmul_v2", {"X": [x], "Y": [w]}, {"trans_x": False, "trans_y": False}, layer)
    if b is not None:
        out = _out("elementwise_add", {"X": [out], "Y": [b]}, {"axis": -1}, layer)
    return out


def _matmul(x, w, layer):
    return _out("matmul_v2", {"X": [x], "Y": [w]}, {"trans_x": False, "trans_y": False}, layer)


def _binary(op, x, y, layer):
    return _out(op, {"X": [x], "Y": [y]}, {"axis": -1}, layer)


def simple_rnn(x: Variable, hidden_size: int, h0: Variable | None = None, act: str = "tanh",
               param_attr=None, bias_attr=None, name: str | None = None) -> Variable:
    """h_t = act(x_t @ W + h_{t-1} @ U + b) over a time-major x [T, B, D]; returns all h_t, [T, B, H].
    W [D, H] is `<name>.w_0`, U [H, H] `<name>.w_1` (both Xavier uniform), b [H] `<name>.b_0` (zeros).
    x @ W + b is computed for every step at once before the loop; the step block (a `recurrent` op)
    adds h_{t-1} @ U. h0 defaults to zeros."""
    T, D = _time_major(x, "simple_rnn")
    H = int(hidden_size)
    layer = _layer_name("simple_rnn", name)
    dtype = x.dtype_name or "float32"
    w = create_parameter([D, H], dtype, param_attr, XavierInitializer(), layer, "w")
    u = create_parameter([H, H], dtype, None, XavierInitializer(), layer, "w")
    battr = ParamAttr.of(bias_attr)
    b = create_parameter([H], dtype, battr, ConstantInitializer(0.0), layer, "b") if battr is not None else None
    xw = _project(x, w, b, layer)
    rnn = StaticRNN(name=layer)
    with rnn.step():
        xw_t = rnn.step_input(xw)
        h_prev = rnn.memory(init=h0) if h0 is not None else rnn.memory(shape=[-1, H], batch_ref=xw_t, dtype=dtype)
        pre = _binary("elementwise_add", xw_t, _matmul(h_prev, u, layer), layer)
        h = _activate(pre, act, layer)
        rnn.update_memory(h_prev, h)
        rnn.step_output(h)
    return rnn()


def lstm(x: Variable, hidden_size: int, h0: Variable | None = None, c0: Variable | None = None,
         param_attr=None, bias_attr=None, name: str | None = None) -> Variable:
    """An LSTM over a time-major x [T, B, D]; returns all h_t, [T, B, H]. Gates, in Paddle's order
    [i, f, c~, o]: g = x_t @ W + h_{t-1} @ U + b ([B, 4H], split in four);
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(c~); h_t = sigmoid(o) * tanh(c_t).
    W [D, 4H] is `<name>.w_0`, U [H, 4H] `<name>.w_1`, b [4H] `<name>.b_0`. h0, c0 default to zeros."""
    T, D = _time_major(x, "lstm")
    H = int(hidden_size)
    layer = _layer_name("lstm", name)
    dtype = x.dtype_name or "float32"
    w = create_parameter([D, 4 * H], dtype, param_attr, XavierInitializer(), layer, "w")
    u = create_parameter([H, 4 * H], dtype, None, XavierInitializer(), layer, "w")
    battr = ParamAttr.of(bias_attr)
    b = create_parameter([4 * H], dtype, battr, ConstantInitializer(0.0), layer, "b") if battr is not None else None
    xw = _project(x, w, b, layer)
    rnn = StaticRNN(name=layer)
    with rnn.step():
        xw_t = rnn.step_input(xw)
        h_prev = rnn.memory(init=h0) if h0 is not None else rnn.memory(shape=[-1, H], batch_ref=xw_t, dtype=dtype)
        c_prev = rnn.memory(init=c0) if c0 is not None else rnn.memory(shape=[-1, H], batch_ref=xw_t, dtype=dtype)
        gates = _binary("elementwise_add", xw_t, _matmul(h_prev, u, layer), layer)
        block = default_main_program().current_block()
        parts = [_tmp(layer) for _ in range(4)]
        block.append_op("split", inputs={"X": [gates]}, outputs={"Out": parts}, attrs={"axis": 1, "num": 4})
        i, f, cand, o = (block.var(n) for n in parts)
        i, f, o = (_activate(v, "sigmoid", layer) for v in (i, f, o))
        cand = _activate(cand, "tanh", layer)
        c = _binary("elementwise_add", _binary("elementwise_mul", f, c_prev, layer),
                    _binary("elementwise_mul", i, cand, layer), layer)
        h = _binary("elementwise_mul", o, _activate(c, "tanh", layer), layer)
        rnn.update_memory(h_prev, h)
        rnn.update_memory(c_prev, c)
        rnn.step_output(h)
    return rnn()


def sequence_last(seq: Variable) -> Variable:
    """The last timestep of a time-major [T, B, ...] sequence (T known): `split` into T pieces along
    dim 0, then `reshape2` the last piece to [B, ...]."""
    shape = seq.shape
    if shape is None or len(shape) < 2 or shape[0] <= 0:
        raise ProgramError(f"sequence_last: {seq.name!r} must be [T, B, ...] with T known, got "
                           f"{list(shape) if shape is not None else None}")
    T = shape[0]
    block = default_main_program().current_block()
    layer = "sequence_last"
    pieces = [_tmp(layer) for _ in range(T)]
    block.append_op("split", inputs={"X": [seq]}, outputs={"Out": pieces}, attrs={"axis": 0, "num": T})
    xshape = _tmp(layer)
    out = _out("reshape2", {"X": [block.var(pieces[-1])]}, {"shape": [-1] + [int(d) for d in shape[2:]]}, layer,
               extra_outputs={"XShape": [xshape]})
    return out
