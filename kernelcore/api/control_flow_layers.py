"""Control-flow layers: StaticRNN and IfElse, built on the recurrent / conditional_block / split_lod_tensor /
merge_lod_tensor ops (kernelcore/ops/control_flow.py). kc.layers offers them."""
from __future__ import annotations

import contextlib
from typing import Iterator

from ..errors import ProgramError
from ..ir.program import Block, Variable, default_main_program
from ..ir.proto import framework_pb2 as pb

VT = pb.VarType

__all__ = ["StaticRNN", "IfElse"]


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
    """Per-instance if-else over a batch:

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
