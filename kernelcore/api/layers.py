"""The user-level API: layers that build ops into the current program.

Each layer family sits in its own section; control flow (StaticRNN, IfElse) is the one below.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ..errors import ProgramError
from ..ir.program import Block, Variable, default_main_program
from ..ir.proto import framework_pb2 as pb

VT = pb.VarType

__all__ = ["StaticRNN", "IfElse"]


# =========================================================================================================
# Control flow: StaticRNN (seed 001's rnn.stepnet()) and IfElse (seed 001's IfElseOp), built on the
# recurrent / conditional_block / split_lod_tensor / merge_lod_tensor ops (kernelcore/ops/control_flow.py).
# =========================================================================================================
def _copy(block: Block, src: Variable, dst: Variable) -> None:
    block.append_op("assign", inputs={"X": [src]}, outputs={"Out": [dst]})


def _reads_and_writes(block: Block) -> tuple[list[str], list[str]]:
    """(names the block's ops read before any op in it writes them, names its ops write), in op order."""
    written: set[str] = set()
    reads, writes = [], []
    for op in block.ops:
        for n in op.input_arg_names:
            if n not in written and n not in reads:
                reads.append(n)
        for n in op.output_arg_names:
            written.add(n)
            if n not in writes:
                writes.append(n)
    return reads, writes


def _outer(block: Block, name: str) -> Variable | None:
    """`name` as declared in the blocks enclosing `block` (not in `block` itself)."""
    parent = block.parent
    return parent.find_var_recursive(name) if parent is not None else None


class _Memory:
    __slots__ = ("init", "pre", "new")

    def __init__(self, init: Variable, pre: Variable):
        self.init, self.pre, self.new = init, pre, None


class StaticRNN:
    """A recurrent net over time-major sequences, built as one `recurrent` op and its step block.

        rnn = kc.layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)              # x: [T, B, D]; x_t: [B, D], x[t] in step t
            h = rnn.memory(init=h0)              # the previous step's h (h0 at the first step)
            h_new = kc.op.tanh(kc.op.elementwise_add(kc.op.matmul_v2(x_t, w), kc.op.matmul_v2(h, u)))
            rnn.update_memory(h, h_new)
            rnn.step_output(h_new)
        out = rnn()                              # [T, B, H]

    The step block reads outer variables (w, u) freely: they become the op's `parameters`. With
    reverse=True the steps run from T-1 down to 0 (outputs stay indexed by t).
    """

    _BEFORE, _IN, _AFTER = range(3)

    def __init__(self, name: str | None = None, *, reverse: bool = False):
        self.name = name
        self.reverse = bool(reverse)
        self._status = self._BEFORE
        self._program = None
        self._parent: Block | None = None
        self._block: Block | None = None
        self._inputs: list[Variable] = []         # outer sequences
        self._memories: dict[str, _Memory] = {}   # pre-state name -> memory
        self._outputs: list[Variable] = []        # outer [T, ...] outputs
        self._seq_len: int | None = None
        self.op = None                            # the recurrent Operator, once built

    # -- building --------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def step(self) -> Iterator[StaticRNN]:
        """Build the step block inside the `with`; the recurrent op is appended when it closes."""
        if self._status != self._BEFORE:
            raise ProgramError("StaticRNN.step() can be entered only once per StaticRNN")
        prog = default_main_program()
        self._program, self._parent = prog, prog.current_block()
        with prog.block_guard() as blk:
            self._block, self._status = blk, self._IN
            try:
                yield self
                self._complete()  # a step block that raised builds no op
            finally:
                self._status = self._AFTER

    def _check_in(self, what: str) -> None:
        if self._status != self._IN:
            raise ProgramError(f"StaticRNN.{what}() must be called inside `with rnn.step():`")

    def _unique(self, prefix: str) -> str:
        return self._program.unique_name(f"{self.name or 'static_rnn'}.{prefix}")

    def step_input(self, x: Variable) -> Variable:
        """The step's slice of sequence `x` ([T, ...] time-major): a step-block variable of shape x.shape[1:]
        with x's name (the recurrent op binds x[t] under that name, as Paddle does)."""
        self._check_in("step_input")
        if not isinstance(x, Variable):
            raise TypeError(f"step_input takes a Variable, got {type(x).__name__}")
        shape = x.shape
        if not shape:
            raise ProgramError(f"step_input: {x.name!r} needs a declared time-major shape [T, ...], "
                               f"has {list(shape) if shape is not None else 'none'}")
        if x in self._inputs:
            return self._block.var(x.name)
        T = shape[0]
        if self._seq_len is None or self._seq_len < 0:
            self._seq_len = T
        elif T >= 0 and T != self._seq_len:
            raise ProgramError(f"step_input: {x.name!r} has {T} timesteps but an earlier input has {self._seq_len}")
        if self._block.has_var(x.name):
            raise ProgramError(f"step_input: the step block already declares {x.name!r}")
        self._inputs.append(x)
        return self._block.create_var(x.name, list(shape[1:]), x.dtype)

    def memory(self, init: Variable | None = None, shape=None, batch_ref: Variable | None = None,
               init_value: float = 0.0, init_batch_dim_idx: int = 0, ref_batch_dim_idx: int | None = None,
               dtype="float32") -> Variable:
        """A state carried across steps: in step t it holds the value update_memory gave it in step t-1,
        and `init` at the first step. Without `init`, the first value is a `shape` tensor of `init_value`
        whose dim init_batch_dim_idx is batch_ref's batch size (dim ref_batch_dim_idx; by default 1 for a
        step input, whose outer sequence is [T, B, ...], else 0)."""
        self._check_in("memory")
        if init is None:
            if shape is None or batch_ref is None:
                raise ProgramError("StaticRNN.memory needs init, or both shape and batch_ref")
            ref = batch_ref
            if batch_ref.block == self._block:
                ref = _outer(self._block, batch_ref.name)
                if ref is None or batch_ref.name not in {v.name for v in self._inputs}:
                    raise ProgramError(f"memory: batch_ref {batch_ref.name!r} is a step-block variable but not "
                                       f"a step input; pass an outer variable")
                idx = 1 if ref_batch_dim_idx is None else ref_batch_dim_idx
            else:
                idx = 0 if ref_batch_dim_idx is None else ref_batch_dim_idx
            boot = self._parent.create_var(self._unique("mem_boot"), None, dtype)
            self._parent.append_op(
                "fill_constant_batch_size_like", inputs={"Input": [ref]}, outputs={"Out": [boot]},
                attrs={"shape": [int(d) for d in shape], "dtype": boot.dtype, "value": float(init_value),
                       "input_dim_idx": idx, "output_dim_idx": init_batch_dim_idx})
            init = boot
        if not isinstance(init, Variable):
            raise TypeError(f"memory(init=...) takes a Variable, got {type(init).__name__}")
        pre = self._block.create_var(self._unique("mem"), list(init.shape) if init.shape is not None else None,
                                     init.dtype if init.dtype is not None else dtype)
        self._memories[pre.name] = _Memory(init, pre)
        return pre

    def update_memory(self, mem: Variable, var: Variable) -> None:
        """`mem` holds `var` in the next step."""
        self._check_in("update_memory")
        m = self._memories.get(getattr(mem, "name", None))
        if m is None:
            raise ProgramError(f"update_memory: {getattr(mem, 'name', mem)!r} is not a memory of this StaticRNN")
        if not isinstance(var, Variable):
            raise TypeError(f"update_memory takes a Variable, got {type(var).__name__}")
        m.new = var

    def step_output(self, o: Variable) -> None:
        """Stack `o` over time into an outer [T, ...] output (rnn() returns them in call order)."""
        self._check_in("step_output")
        if not isinstance(o, Variable):
            raise TypeError(f"step_output takes a Variable, got {type(o).__name__}")
        tmp = self._block.create_var(self._unique("out"), list(o.shape) if o.shape is not None else None,
                                     o.dtype if o.dtype is not None else "float32")
        _copy(self._block, o, tmp)
        shape = tmp.shape
        T = self._seq_len if self._seq_len is not None else -1
        outer = self._parent.create_var(tmp.name, [T] + list(shape) if shape is not None else None, tmp.dtype)
        self._outputs.append(outer)

    def output(self, *outputs: Variable) -> None:
        for o in outputs:
            self.step_output(o)

    def _complete(self) -> None:
        blk, parent = self._block, self._parent
        if not self._inputs:
            raise ProgramError("StaticRNN: the step block has no step_input; the sequence length comes from it")
        if not self._outputs:
            raise ProgramError("StaticRNN: the step block has no step_output")
        states = []
        for m in self._memories.values():
            if m.new is None:
                raise ProgramError(f"StaticRNN: memory {m.pre.name!r} (init {m.init.name!r}) is never updated: "
                                   f"call rnn.update_memory(mem, new_value) in the step")
            st = blk.create_var(self._unique("state"), list(m.new.shape) if m.new.shape is not None else None,
                                m.new.dtype if m.new.dtype is not None else "float32")
            _copy(blk, m.new, st)  # Paddle's rnn_memory_helper: the state the next step reads
            states.append(st.name)
        # parameters: what the step block reads from outside (neither a step input nor a memory nor written
        # in the block), as declared by the enclosing blocks
        local = {v.name for v in self._inputs} | set(self._memories)
        reads, _ = _reads_and_writes(blk)
        params = [n for n in reads if n not in local and not blk.has_var(n) and _outer(blk, n) is not None]
        step_scopes = parent.create_var(self._unique("step_scopes"), type=VT.STEP_SCOPES)
        mems = list(self._memories.values())
        self.op = parent.append_op(
            "recurrent",
            inputs={"inputs": self._inputs, "initial_states": [m.init for m in mems] or None,
                    "parameters": params or None},
            outputs={"outputs": self._outputs, "step_scopes": [step_scopes]},
            attrs={"sub_block": blk, "has_states": bool(mems), "ex_states": [m.pre.name for m in mems],
                   "states": states, "reverse": self.reverse})

    # -- result ----------------------------------------------------------------------------------------
    def __call__(self):
        """The stacked outputs: one Variable, or a list when the step has several."""
        if self._status != self._AFTER or self.op is None:
            raise ProgramError("call the StaticRNN after its `with rnn.step():` block")
        return self._outputs[0] if len(self._outputs) == 1 else list(self._outputs)


# ---------------------------------------------------------------------------------------------------------
class IfElse:
    """Per-instance if-else over a batch (seed 001's IfElseOp):

        cond = ...                                   # bool [N, 1]: one entry per row
        ie = kc.layers.IfElse(cond)
        with ie.true_block():
            xt = ie.input(x)                         # the rows of x where cond is true
            ie.output(kc.op.relu(xt))
        with ie.false_block():
            xf = ie.input(x)                         # the other rows
            ie.output(kc.op.tanh(xf))
        out, = ie()                                  # rows merged back in the original order

    ie.input appends a `split_lod_tensor` to the enclosing block; each branch is a `conditional_block`
    (is_scalar_condition false: it runs iff every tensor it reads from outside is non-empty) with its own
    scope; ie() appends one `merge_lod_tensor` per output. Like Paddle's, ie() returns a list.
    """

    _OUT, _TRUE, _FALSE = range(3)

    def __init__(self, cond: Variable, name: str | None = None):
        if not isinstance(cond, Variable):
            raise TypeError(f"IfElse takes a Variable condition, got {type(cond).__name__}")
        self.cond, self.name = cond, name
        self._status = self._OUT
        self._program = None
        self._parent: Block | None = None
        self._inputs: dict[str, tuple[Variable, Variable]] = {}  # outer name -> (true rows, false rows)
        self._outputs: tuple[list[Variable], list[Variable]] = ([], [])  # (false outs, true outs)
        self._done = {True: False, False: False}
        self.ops: list = []  # the conditional_block Operators

    def _unique(self, prefix: str) -> str:
        return self._program.unique_name(f"{self.name or 'ifelse'}.{prefix}")

    def true_block(self):
        return self._branch(True)

    def false_block(self):
        return self._branch(False)

    @contextlib.contextmanager
    def _branch(self, is_true: bool) -> Iterator[Block]:
        which = "true_block" if is_true else "false_block"
        if self._status != self._OUT:
            raise ProgramError(f"IfElse.{which}() cannot be entered inside another branch")
        if self._done[is_true]:
            raise ProgramError(f"IfElse.{which}() was already built")
        prog = default_main_program()
        if self._program is None:
            self._program, self._parent = prog, prog.current_block()
        elif prog is not self._program or prog.current_block() != self._parent:
            raise ProgramError(f"IfElse.{which}() must be built in the block where the first branch was")
        with prog.block_guard() as blk:
            self._status = self._TRUE if is_true else self._FALSE
            try:
                yield blk
            finally:
                self._status = self._OUT
            if not self._outputs[int(is_true)]:
                raise ProgramError(f"IfElse.{which}(): call ie.output(...) inside the branch")
            self._complete(blk)
        self._done[is_true] = True

    def input(self, x: Variable) -> Variable:
        """The rows of `x` that belong to this branch (cond true for the true branch)."""
        if self._status == self._OUT:
            raise ProgramError("IfElse.input() must be called inside true_block() or false_block()")
        if x.name not in self._inputs:
            shape = [-1] + list(x.shape[1:]) if x.shape else None
            t = self._parent.create_var(self._unique("input_true"), shape, x.dtype)
            f = self._parent.create_var(self._unique("input_false"), shape, x.dtype)
            self._parent.append_op("split_lod_tensor", inputs={"X": [x], "Mask": [self.cond]},
                                   outputs={"OutTrue": [t], "OutFalse": [f]}, attrs={"level": 0})
            self._inputs[x.name] = (t, f)
        t, f = self._inputs[x.name]
        return t if self._status == self._TRUE else f

    def output(self, *outs: Variable) -> None:
        """This branch's results, in order; the other branch must give as many."""
        if self._status == self._OUT:
            raise ProgramError("IfElse.output() must be called inside true_block() or false_block()")
        table = self._outputs[1 if self._status == self._TRUE else 0]
        block = self._program.current_block()
        for o in outs:
            if not isinstance(o, Variable):
                raise TypeError(f"IfElse.output takes Variables, got {type(o).__name__}")
            shape = [-1] + list(o.shape[1:]) if o.shape else None
            outer = self._parent.create_var(self._unique("output"), shape, o.dtype or "float32")
            _copy(block, o, outer)  # the branch writes the outer variable itself
            table.append(outer)

    def _complete(self, blk: Block) -> None:
        reads, writes = _reads_and_writes(blk)
        inputs = [n for n in reads if n != self.cond.name and not blk.has_var(n) and _outer(blk, n) is not None]
        outs = [n for n in writes if not blk.has_var(n) and _outer(blk, n) is not None]
        scope = self._parent.create_var(self._unique("scope"), type=VT.STEP_SCOPES)
        self.ops.append(self._parent.append_op(
            "conditional_block", inputs={"Cond": [self.cond], "Input": inputs or None},
            outputs={"Out": outs or None, "Scope": [scope]},
            attrs={"sub_block": blk, "is_scalar_condition": False}))

    def __call__(self) -> list[Variable]:
        if self._status != self._OUT:
            raise ProgramError("call the IfElse outside its branches")
        false_outs, true_outs = self._outputs
        if not false_outs and not true_outs:
            raise ProgramError("IfElse: build true_block() and/or false_block() before calling it")
        if false_outs and true_outs and len(false_outs) != len(true_outs):
            raise ProgramError(f"IfElse: the true branch gives {len(true_outs)} outputs, the false branch "
                               f"{len(false_outs)}; they must match")
        if not false_outs or not true_outs:
            return list(false_outs or true_outs)
        merged = []
        for f, t in zip(false_outs, true_outs):
            n = self.cond.shape[0] if self.cond.shape else -1
            tail = list(t.shape[1:]) if t.shape else None
            out = self._parent.create_var(self._unique("merged"), [n] + tail if tail is not None else None,
                                          t.dtype)
            self._parent.append_op("merge_lod_tensor",
                                   inputs={"X": [self.cond], "Mask": [self.cond], "InTrue": [t], "InFalse": [f]},
                                   outputs={"Out": [out]}, attrs={"level": 0})
            merged.append(out)
        return merged


# =========================================================================================================
# Layers that create parameters (seed 002: "layer creators ... create model parameters"), after Paddle's
# static layers: each parameter is declared (persistable) in the main program's global block and
# initialised by an op in the startup program (uniform_random / gaussian_random / fill_constant), so
# running the startup program once gives every parameter its first value. Names follow Paddle: the layer
# is `fc_0`, its weight `fc_0.w_0`, its bias `fc_0.b_0`, its outputs `fc_0.tmp_0`, `fc_0.tmp_1`, ...
# Also: data, embedding, the losses, mean, accuracy, dropout, and simple_rnn / lstm on StaticRNN above.
# =========================================================================================================
import math as _math  # noqa: E402

from ..ir.program import default_startup_program as _default_startup  # noqa: E402

__all__ += ["ParamAttr", "Initializer", "ConstantInitializer", "UniformInitializer", "NormalInitializer",
            "XavierInitializer", "data", "create_parameter", "fc", "embedding", "cross_entropy",
            "softmax_with_cross_entropy", "mean", "accuracy", "dropout", "simple_rnn", "lstm", "sequence_last"]


class Initializer:
    """Appends the op that gives a parameter its first value, to the startup program's global block."""

    def __call__(self, var: Variable, block: Block) -> None:
        raise NotImplementedError

    def _fan(self, shape) -> tuple[int, int]:
        """Paddle's fan_in/fan_out: [in, out] for a 2-D weight; receptive field times channels beyond."""
        shape = [int(d) for d in shape]
        if not shape:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        receptive = _math.prod(shape[2:])
        return shape[1] * receptive, shape[0] * receptive


class ConstantInitializer(Initializer):
    def __init__(self, value: float = 0.0):
        self.value = float(value)

    def __call__(self, var, block):
        block.append_op("fill_constant", outputs={"Out": [var]},
                        attrs={"shape": list(var.shape), "dtype": var.dtype, "value": self.value,
                               "str_value": repr(self.value)})


class UniformInitializer(Initializer):
    """Uniform in [low, high); seed 0 draws from the executor's generator (Executor.seed)."""

    def __init__(self, low: float = -1.0, high: float = 1.0, seed: int = 0):
        self.low, self.high, self.seed = float(low), float(high), int(seed)

    def __call__(self, var, block):
        block.append_op("uniform_random", outputs={"Out": [var]},
                        attrs={"shape": list(var.shape), "dtype": var.dtype, "min": self.low, "max": self.high,
                               "seed": self.seed})


class NormalInitializer(Initializer):
    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0):
        self.loc, self.scale, self.seed = float(loc), float(scale), int(seed)

    def __call__(self, var, block):
        block.append_op("gaussian_random", outputs={"Out": [var]},
                        attrs={"shape": list(var.shape), "dtype": var.dtype, "mean": self.loc, "std": self.scale,
                               "seed": self.seed})


class XavierInitializer(Initializer):
    """Glorot: uniform in ±sqrt(6 / (fan_in + fan_out)), or normal with std sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, uniform: bool = True, fan_in: int | None = None, fan_out: int | None = None, seed: int = 0):
        self.uniform, self.fan_in, self.fan_out, self.seed = uniform, fan_in, fan_out, int(seed)

    def __call__(self, var, block):
        f_in, f_out = self._fan(var.shape)
        f_in = self.fan_in if self.fan_in is not None else f_in
        f_out = self.fan_out if self.fan_out is not None else f_out
        if self.uniform:
            limit = _math.sqrt(6.0 / (f_in + f_out))
            UniformInitializer(-limit, limit, self.seed)(var, block)
        else:
            NormalInitializer(0.0, _math.sqrt(2.0 / (f_in + f_out)), self.seed)(var, block)


class ParamAttr:
    """How a layer makes one parameter: its name (default: Paddle's `<layer>.w_N` / `.b_N`), its
    initializer (default: the layer's — Xavier for weights, zeros for biases) and whether it trains."""

    def __init__(self, name: str | None = None, initializer: Initializer | None = None, trainable: bool = True):
        self.name, self.initializer, self.trainable = name, initializer, trainable

    @staticmethod
    def of(attr) -> ParamAttr | None:
        """None -> defaults; False -> no parameter; a string -> a name; an Initializer -> that initializer."""
        if attr is False:
            return None
        if attr is None or attr is True:
            return ParamAttr()
        if isinstance(attr, ParamAttr):
            return attr
        if isinstance(attr, str):
            return ParamAttr(name=attr)
        if isinstance(attr, Initializer):
            return ParamAttr(initializer=attr)
        if isinstance(attr, dict):
            return ParamAttr(**attr)
        raise TypeError(f"a parameter attribute is None, False, a name, an Initializer, a dict or a ParamAttr; "
                        f"got {type(attr).__name__}")


def create_parameter(shape, dtype="float32", attr=None, default_initializer: Initializer | None = None,
                     prefix: str = "param", suffix: str = "w") -> Variable:
    """A parameter in the main program's global block, initialised in the startup program. Reusing a
    name (ParamAttr(name=...)) shares the parameter: the existing one is returned when shapes agree."""
    attr = ParamAttr.of(attr) or ParamAttr()
    main = default_main_program()
    gblock = main.global_block()
    name = attr.name or main.unique_name(f"{prefix}.{suffix}")
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise ProgramError(f"parameter {name!r}: every dim must be known, got shape {shape} (declare the "
                           f"input's feature dims)")
    if gblock.has_var(name):
        existing = gblock.var(name)
        if list(existing.shape or ()) != shape:
            raise ProgramError(f"parameter {name!r} exists with shape {list(existing.shape or ())}; "
                               f"this layer wants {shape}")
        return existing
    param = gblock.create_parameter(name, shape, dtype, stop_gradient=not attr.trainable)
    startup = _default_startup().global_block()
    if not startup.has_var(name):
        init_var = startup.create_var(name, shape, dtype, persistable=True)
        (attr.initializer or default_initializer or XavierInitializer())(init_var, startup)
    return param


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
    in_features = _math.prod(shape[num_flatten_dims:]) if all(d >= 0 for d in shape[num_flatten_dims:]) else -1
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
