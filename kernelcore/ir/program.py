"""Program, Block, Variable and Operator: thin views over the protobuf descs.

The ProgramDesc message is the only state; the Python objects read and write
it (create vars and ops, find a var through the parent blocks, unique names).
Ops are validated against their OpProto when appended, and their outputs'
shapes and dtypes are inferred then. The structure checks live in structure.py,
the text form in program_text.py, parsing bytes in program_bytes.py.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

from . import attrs as attrlib
from . import dtypes
from ..errors import OpValidationError, ProgramError
from .program_bytes import parse_program_desc
from .program_text import op_text, program_text, var_text
from .proto import framework_pb2 as pb
from .registry import get_op_def
from .structure import block_refs

VT = pb.VarType


# ---------------------------------------------------------------------------
class Variable:
    """A variable's declaration (VarDesc) in a block. Its value lives in a Scope."""

    __slots__ = ("block", "desc")

    def __init__(self, block: Block, desc: pb.VarDesc):
        self.block, self.desc = block, desc

    name = property(lambda self: self.desc.name)
    type = property(lambda self: self.desc.type.type)
    persistable = property(lambda self: self.desc.persistable)
    is_parameter = property(lambda self: self.desc.is_parameter)
    stop_gradient = property(lambda self: self.desc.stop_gradient)

    @property
    def _tensor(self):
        return dtypes.tensor_desc(self.desc)

    @property
    def shape(self) -> tuple[int, ...] | None:
        t = self._tensor
        return tuple(t.dims) if t is not None else None

    @property
    def dtype(self) -> int | None:
        t = self._tensor
        return t.data_type if t is not None else None

    @property
    def dtype_name(self) -> str | None:
        d = self.dtype
        return dtypes.type_name(d) if d is not None else None

    def set_shape(self, shape, dtype=None) -> None:
        t = self.desc.type
        if t.type == VT.LOD_TENSOR_ARRAY:
            td = t.tensor_array.tensor
        elif t.type == VT.SELECTED_ROWS:
            td = t.selected_rows
        else:
            td = t.lod_tensor.tensor
        if dtype is not None:
            td.data_type = dtypes.parse_dtype(dtype)
        elif not td.HasField("data_type"):
            td.data_type = VT.FP32
        del td.dims[:]
        td.dims.extend(int(d) for d in shape)
        self.block.program._touch()

    def set_persistable(self, value: bool = True) -> None:
        self.desc.persistable = value
        self.block.program._touch()

    def set_stop_gradient(self, value: bool = True) -> None:
        self.desc.stop_gradient = value
        self.block.program._touch()

    def __eq__(self, other) -> bool:
        return isinstance(other, Variable) and other.block == self.block and other.name == self.name

    def __hash__(self) -> int:
        return hash((self.block.idx, self.name))

    def __str__(self) -> str:
        return var_text(self.desc)

    def __repr__(self) -> str:
        return f"<Variable {var_text(self.desc)}>"


# ---------------------------------------------------------------------------
class Operator:
    """An op (OpDesc) in a block."""

    __slots__ = ("block", "desc")

    def __init__(self, block: Block, desc: pb.OpDesc):
        self.block, self.desc = block, desc

    type = property(lambda self: self.desc.type)

    @property
    def idx(self) -> int:
        for i, d in enumerate(self.block.desc.ops):
            if d is self.desc or d == self.desc:
                return i
        raise ProgramError(f"op {self.type!r} is no longer in block {self.block.idx}")

    @property
    def opdef(self):
        return get_op_def(self.type)

    def input(self, slot: str) -> list[str]:
        return next((list(v.arguments) for v in self.desc.inputs if v.parameter == slot), [])

    def output(self, slot: str) -> list[str]:
        return next((list(v.arguments) for v in self.desc.outputs if v.parameter == slot), [])

    @property
    def inputs(self) -> dict[str, list[str]]:
        return {v.parameter: list(v.arguments) for v in self.desc.inputs}

    @property
    def outputs(self) -> dict[str, list[str]]:
        return {v.parameter: list(v.arguments) for v in self.desc.outputs}

    @property
    def input_arg_names(self) -> list[str]:
        return [a for v in self.desc.inputs for a in v.arguments]

    @property
    def output_arg_names(self) -> list[str]:
        return [a for v in self.desc.outputs for a in v.arguments]

    def has_attr(self, name: str) -> bool:
        return any(a.name == name for a in self.desc.attrs)

    def attr(self, name: str, default=None):
        for a in self.desc.attrs:
            if a.name == name:
                return attrlib.read(a)
        return default

    @property
    def attrs(self) -> dict:
        return {a.name: attrlib.read(a) for a in self.desc.attrs}

    def attr_type(self, name: str) -> int | None:
        return next((a.type for a in self.desc.attrs if a.name == name), None)

    def set_attr(self, name: str, value) -> None:
        where = f"op {self.type!r} in block {self.block.idx}"
        d = self.opdef
        spec = d.attr_spec(name)
        if isinstance(value, Block):
            value = value.idx
        value = d.check_attr(name, value, where)
        existing = next((a for a in self.desc.attrs if a.name == name), None)
        _write_attr(self.desc, name, spec.type, value, existing)
        self.block.program._touch()

    def sub_blocks(self) -> list[Block]:
        """The blocks this op runs (attributes of type BLOCK or BLOCKS)."""
        prog = self.block.program
        return [prog.block(j) for _, j in block_refs(self.desc)]

    def __eq__(self, other) -> bool:
        return isinstance(other, Operator) and other.block == self.block and other.desc == self.desc

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return op_text(self.desc)

    def __repr__(self) -> str:
        return f"<Operator {op_text(self.desc)}>"


def _write_attr(op_desc, name, attr_type, value, existing=None) -> None:
    msg = existing if existing is not None else op_desc.attrs.add()
    attrlib.write(msg, name, attr_type, value)


# ---------------------------------------------------------------------------
class Block:
    """A block (BlockDesc): a scope of names, a list of ops, and a parent block."""

    __slots__ = ("program", "idx", "_index")

    def __init__(self, program: Program, idx: int):
        self.program, self.idx = program, idx
        self._index: dict[str, int] = {}  # name -> position in desc.vars; verified on use

    @property
    def desc(self) -> pb.BlockDesc:
        return self.program.desc.blocks[self.idx]

    @property
    def parent_idx(self) -> int:
        return self.desc.parent_idx

    @property
    def parent(self) -> Block | None:
        p = self.desc.parent_idx
        return self.program.block(p) if p >= 0 else None

    @property
    def forward_block_idx(self) -> int:
        return self.desc.forward_block_idx

    # -- variables --------------------------------------------------------
    def _var_desc(self, name: str) -> pb.VarDesc | None:
        vars_ = self.desc.vars
        index = self._index
        i = index.get(name)
        if i is not None and i < len(vars_) and vars_[i].name == name:
            return vars_[i]
        if i is None and len(index) == len(vars_):
            # an index as long as the desc and without the name: absent (create_var keeps the index whole,
            # so declaring n variables costs n lookups, not n rebuilds of the index)
            return None
        self._index = index = {v.name: k for k, v in enumerate(vars_)}
        i = index.get(name)
        return vars_[i] if i is not None else None

    def has_var(self, name: str) -> bool:
        return self._var_desc(name) is not None

    def var(self, name: str) -> Variable:
        """The variable `name` declared in this block (not its parents)."""
        d = self._var_desc(name)
        if d is None:
            raise ProgramError(f"block {self.idx} declares no variable {name!r}")
        return Variable(self, d)

    def find_var_recursive(self, name: str) -> Variable | None:
        """`name` here or in the nearest parent block declaring it; None when absent."""
        b = self
        while b is not None:
            d = b._var_desc(name)
            if d is not None:
                return Variable(b, d)
            b = b.parent
        return None

    @property
    def vars(self) -> list[Variable]:
        return [Variable(self, d) for d in self.desc.vars]

    def create_var(self, name: str | None = None, shape=None, dtype="float32", *,
                   type: int = VT.LOD_TENSOR, persistable: bool = False,
                   stop_gradient: bool = False, is_parameter: bool = False,
                   lod_level: int = 0) -> Variable:
        if name is None:
            name = self.program.unique_name("tmp")
        if not isinstance(name, str) or not name:
            raise ProgramError(f"a variable name must be a non-empty string, got {name!r}")
        if self.has_var(name):
            raise ProgramError(f"block {self.idx} already declares a variable {name!r}")
        d = self.desc.vars.add()
        d.name = name
        d.type.type = type
        d.persistable, d.stop_gradient, d.is_parameter = persistable, stop_gradient, is_parameter
        if type in dtypes.TENSOR_TYPES:
            td = (d.type.lod_tensor if type == VT.LOD_TENSOR else
                  d.type.tensor_array if type == VT.LOD_TENSOR_ARRAY else None)
            tensor = td.tensor if td is not None else d.type.selected_rows
            tensor.data_type = dtypes.parse_dtype(dtype) if dtype is not None else VT.FP32
            if shape is not None:
                tensor.dims.extend(int(s) for s in shape)
            if td is not None and lod_level:
                td.lod_level = lod_level
        self._index[name] = len(self.desc.vars) - 1
        self.program._touch()
        return Variable(self, d)

    def create_parameter(self, name: str, shape, dtype="float32", **kw) -> Variable:
        kw.setdefault("persistable", True)
        return self.create_var(name, shape, dtype, is_parameter=True, **kw)

    def remove_var(self, name: str) -> None:
        vars_ = self.desc.vars
        for i, d in enumerate(vars_):
            if d.name == name:
                del vars_[i]
                self._index = {}
                self.program._touch()
                return
        raise ProgramError(f"block {self.idx} declares no variable {name!r}")

    # -- ops --------------------------------------------------------------
    @property
    def ops(self) -> list[Operator]:
        return [Operator(self, d) for d in self.desc.ops]

    def op(self, i: int) -> Operator:
        ops = self.desc.ops
        if not -len(ops) <= i < len(ops):
            raise ProgramError(f"block {self.idx} has {len(ops)} ops; there is no op #{i}")
        return Operator(self, ops[i])

    def append_op(self, type: str, inputs=None, outputs=None, attrs=None, *, infer: bool = True) -> Operator:
        return self._add_op(len(self.desc.ops), type, inputs, outputs, attrs, infer)

    def insert_op(self, index: int, type: str, inputs=None, outputs=None, attrs=None, *,
                  infer: bool = True) -> Operator:
        return self._add_op(index, type, inputs, outputs, attrs, infer)

    def prepend_op(self, type: str, inputs=None, outputs=None, attrs=None, *, infer: bool = True) -> Operator:
        return self._add_op(0, type, inputs, outputs, attrs, infer)

    def remove_op(self, index: int) -> None:
        del self.desc.ops[index]
        self.program._touch()

    def _add_op(self, index, type, inputs, outputs, attrs, infer) -> Operator:
        opdef = get_op_def(type)  # UnknownOpError when no entry
        where = f"op {type!r} (block {self.idx}, op #{index})"
        ins = _normalize_slots(inputs, where, "input")
        outs = _normalize_slots(outputs, where, "output")
        given = {}
        for name, value in (attrs or {}).items():
            if isinstance(value, Block):
                value = value.idx
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Block) for v in value):
                value = [b.idx for b in value]
            given[name] = value
        bound = opdef.bind(ins, outs, given, where)
        for slot, names in ins.items():
            for n in names:
                if self.find_var_recursive(n) is None:
                    raise OpValidationError(
                        f"{where}: input {slot!r} names variable {n!r}, which block {self.idx} "
                        f"and its parents do not declare")
        desc = pb.OpDesc(type=type)
        for slot, names in ins.items():
            desc.inputs.add(parameter=slot, arguments=names)
        for slot, names in outs.items():
            desc.outputs.add(parameter=slot, arguments=names)
        for name, value in bound.given.items():
            _write_attr(desc, name, opdef.attr_spec(name).type, value)
        for name, value in bound.attrs.items():
            if name not in bound.given:
                _write_attr(desc, name, opdef.attrs[name].type, value)
        # Outputs not declared yet are created here; if inference then fails, they are removed
        # and the declared ones get their types back, so a failed append leaves nothing behind.
        created, saved = [], []
        for slot, names in outs.items():
            for n in names:
                v = self.find_var_recursive(n)
                if v is None:
                    created.append(self.create_var(n).name)
                else:
                    saved.append((v, pb.VarType.FromString(v.desc.type.SerializeToString())))
        if infer and opdef.infer_shape is not None:
            from .shape_inference import infer_op
            try:
                infer_op(self, desc, opdef, where)
            except BaseException:
                for n in created:
                    self.remove_var(n)
                for v, t in saved:
                    v.desc.type.CopyFrom(t)
                raise
        self.desc.ops.insert(index, desc) if index < len(self.desc.ops) else self.desc.ops.append(desc)
        self.program._touch()
        return Operator(self, self.desc.ops[index])

    def __eq__(self, other) -> bool:
        return isinstance(other, Block) and other.program is self.program and other.idx == self.idx

    def __hash__(self) -> int:
        return hash((id(self.program), self.idx))

    def __repr__(self) -> str:
        return f"<Block {self.idx} parent={self.parent_idx} vars={len(self.desc.vars)} ops={len(self.desc.ops)}>"


def _normalize_slots(slots, where, kind) -> dict[str, list[str]]:
    out = {}
    for slot, args in (slots or {}).items():
        if args is None:
            continue
        if not isinstance(args, (list, tuple)):
            args = [args]
        names = []
        for a in args:
            n = a.name if isinstance(a, Variable) else a
            if not isinstance(n, str) or not n:
                raise OpValidationError(f"{where}: {kind} {slot!r} takes variables or names, got {a!r:.60}")
            names.append(n)
        out[slot] = names
    return out


# ---------------------------------------------------------------------------
class Program:
    """A ProgramDesc: blocks of vars and ops. Block 0 is the global block."""

    def __init__(self, desc: pb.ProgramDesc | None = None):
        if desc is None:
            desc = pb.ProgramDesc()
            desc.blocks.add(idx=0, parent_idx=-1)
        self.desc = desc
        self._blocks: list[Block] = []
        self._current = 0
        self._version = 0  # bumped on every edit made through these views
        self._outline_reads = None  # what the outline reads of each op, kept from loading (op_reads.py)
        self._name_counts: dict[str, int] = {}

    # -- blocks -----------------------------------------------------------
    def block(self, idx: int) -> Block:
        n = len(self.desc.blocks)
        if not 0 <= idx < n:
            raise ProgramError(f"the program has {n} block(s); there is no block {idx}")
        while len(self._blocks) < n:
            self._blocks.append(Block(self, len(self._blocks)))
        return self._blocks[idx]

    def global_block(self) -> Block:
        return self.block(0)

    @property
    def blocks(self) -> list[Block]:
        return [self.block(i) for i in range(len(self.desc.blocks))]

    @property
    def num_blocks(self) -> int:
        return len(self.desc.blocks)

    def current_block(self) -> Block:
        return self.block(self._current)

    def create_block(self, parent_idx: int | None = None) -> Block:
        """A new block whose parent is `parent_idx` (default: the current block); it becomes current."""
        parent = self._current if parent_idx is None else parent_idx
        self.block(parent)  # checks the index
        idx = len(self.desc.blocks)
        self.desc.blocks.add(idx=idx, parent_idx=parent)
        self._current = idx
        self._touch()
        return self.block(idx)

    def rollback(self) -> None:
        """Make the current block's parent current again."""
        self._current = max(self.current_block().parent_idx, 0)

    @contextlib.contextmanager
    def block_guard(self, block: Block | None = None) -> Iterator[Block]:
        """Build ops in `block` (default: a new sub-block of the current one), then restore."""
        saved = self._current
        try:
            if block is None:
                block = self.create_block()
            self._current = block.idx
            yield block
        finally:
            self._current = saved

    # -- names ------------------------------------------------------------
    def unique_name(self, prefix: str) -> str:
        """`prefix_N` with the smallest N this program does not use yet in any block."""
        n = self._name_counts.get(prefix, 0)
        while True:
            name = f"{prefix}_{n}"
            n += 1
            if not any(b.has_var(name) for b in self.blocks):
                self._name_counts[prefix] = n
                return name

    def continue_names_of(self, other: Program) -> None:
        """Number unique names on from where `other` stopped: this program was derived from it (a pruned copy),
        and a name made here should not repeat one a user saw made there."""
        self._name_counts = dict(other._name_counts)

    # -- edits and identity ----------------------------------------------
    def _touch(self) -> None:
        self._version += 1
        self._outline_reads = None

    def outline_reads(self) -> list | None:
        """The outline's per-op records kept from loading (op_reads.py), while the program is unedited."""
        return self._outline_reads if self._version == 0 else None

    def touch(self) -> None:
        """Say that `desc` was edited directly, so prepared copies are rebuilt."""
        self._touch()

    @property
    def version(self) -> int:
        return self._version

    def clone(self) -> Program:
        d = pb.ProgramDesc()
        d.CopyFrom(self.desc)
        p = Program(d)
        p.continue_names_of(self)
        return p

    def to_bytes(self) -> bytes:
        return self.desc.SerializeToString(deterministic=True)

    serialize_to_string = to_bytes

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "bytes") -> Program:
        """Parse a serialized ProgramDesc; anything malformed raises LoadError (program_from_bytes)."""
        return program_from_bytes(data, source=source)

    def __eq__(self, other) -> bool:
        return isinstance(other, Program) and other.desc == self.desc

    __hash__ = object.__hash__

    def all_ops(self) -> Iterator[Operator]:
        for b in self.blocks:
            yield from b.ops

    def list_vars(self) -> Iterator[Variable]:
        for b in self.blocks:
            yield from b.vars

    def __str__(self) -> str:
        return program_text(self.desc)

    def __repr__(self) -> str:
        nops = sum(len(b.ops) for b in self.desc.blocks)
        return f"<Program blocks={len(self.desc.blocks)} ops={nops}>"


# ---------------------------------------------------------------------------
# The current program, for op creators and layers.
_default_main = Program()
_default_startup = Program()
_current: contextvars.ContextVar[tuple[Program, Program]] = contextvars.ContextVar(
    "kernelcore_current_program", default=(_default_main, _default_startup))


def default_main_program() -> Program:
    return _current.get()[0]


def default_startup_program() -> Program:
    return _current.get()[1]


@contextlib.contextmanager
def program_guard(main: Program, startup: Program | None = None) -> Iterator[Program]:
    """Build into `main` (and `startup`, for parameter initialisers) inside the block."""
    if not isinstance(main, Program):
        raise TypeError(f"program_guard takes a Program, got {type(main).__name__}")
    token = _current.set((main, startup if startup is not None else _current.get()[1]))
    try:
        yield main
    finally:
        _current.reset(token)


def program_from_bytes(data: bytes, source: str = "bytes") -> Program:
    """Parse and check a serialized ProgramDesc; LoadError unless it is a well-formed program."""
    desc, outline_reads = parse_program_desc(data, source)
    program = Program(desc)
    program._outline_reads = outline_reads
    return program
