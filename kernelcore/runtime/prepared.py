"""A block made ready to run, once per program version: each op's kernel chosen (its fast variant where
kernelcore/runtime/fast_paths.py has one and the switch is on), attributes parsed, slots resolved to names, and where
a traced run finds each input's (shape, dtype) (the derived records' plan, events.BlockRun)."""
from __future__ import annotations

import numpy as np

from . import cpu_parts, events, fast_paths
from ..errors import PlaceError
from ..ir import dtypes
from ..ir.program import Program
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import get_op_def, has_op


class PreparedOp:
    """An op ready to run: kernel chosen, attributes parsed, slot names resolved."""

    __slots__ = ("type", "block", "idx", "opdef", "kernel", "kernel_name", "attrs", "ins", "outs",
                 "is_gen", "in_names", "out_names", "in_pairs", "out_pairs", "in_dtypes", "in_shapes", "fast",
                 "in_sources", "recorded")

    def __init__(self, program: Program, block_idx: int, idx: int, desc: pb.OpDesc, place):
        self.type, self.block, self.idx = desc.type, block_idx, idx
        where = f"op {desc.type!r} (block {block_idx}, op #{idx})"
        opdef = get_op_def(desc.type)
        self.opdef = opdef
        bound = opdef.bind_desc(desc, where)
        self.ins, self.outs, self.attrs = bound.ins, bound.outs, bound.attrs
        self.in_names = [n for _, names, _ in self.ins for n in names]
        self.out_names = [n for _, names, _ in self.outs for n in names]
        # (slot, name) of each input/output variable, in the order events list them
        self.in_pairs = tuple((slot, n) for slot, names, _ in self.ins for n in names)
        self.out_pairs = tuple((slot, n) for slot, names, _ in self.outs for n in names)
        dtype_name = _first_input_dtype(program, block_idx, self.in_names)
        kernel = opdef.find_kernel(place.kind, dtype_name)
        if kernel is None:
            have = sorted({p for p, _ in opdef.kernels})
            raise PlaceError(f"{where}: no kernel for {place} (dtype {dtype_name}); "
                             f"kernels exist for {have or 'no place'}{'. ' + opdef.no_kernel_reason if opdef.no_kernel_reason else ''}")
        self.kernel = fast_paths.choose(desc.type, place.kind, dtype_name, kernel)
        self.kernel_name = f"{kernel.__module__.rsplit('.', 1)[-1]}.{kernel.__name__}[{place.kind}]"
        self.is_gen = getattr(kernel, "_kc_generator", None)
        if self.is_gen is None:
            import inspect
            self.is_gen = inspect.isgeneratorfunction(kernel)
        self.fast, self.in_dtypes, self.in_shapes = None, (), ()
        make = opdef.specializers.get(place.kind)
        if (make is not None and not self.is_gen and len(self.out_names) == 1
                and all(not names or (len(names) == 1 and not dup) for _, names, dup in self.ins)):
            decls = [program.block(block_idx).find_var_recursive(n) for n in self.in_names]
            self.in_dtypes = tuple(_declared_dtype(v) for v in decls)
            self.in_shapes = tuple(None if v is None else v.shape for v in decls)
            # None: the plain kernel runs this op
            self.fast = fast_paths.choose_form(desc.type, place.kind, make(self, place.xp))


def _declared_dtype(v):
    if v is None or v.dtype is None:
        return None
    try:
        return np.dtype(dtypes.to_numpy(v.dtype))
    except TypeError:
        return None


def _first_input_dtype(program: Program, block_idx: int, names) -> str | None:
    if not names:
        return None
    v = program.block(block_idx).find_var_recursive(names[0])
    if v is None or v.dtype is None:
        return None
    return dtypes.type_name(v.dtype)


class PreparedBlock:
    __slots__ = ("program", "block_idx", "ops", "var_descs", "binding", "feed_ops", "feed_decls", "layout",
                 "first_uses", "declared", "template", "read_at_start", "split_run", "fresh_arrays", "__weakref__")

    def __init__(self, program: Program, block_idx: int, place):
        self.program, self.block_idx = program, block_idx
        block = program.block(block_idx)
        self.ops = [PreparedOp(program, block_idx, i, d, place) for i, d in enumerate(block.desc.ops)]
        # (name, persistable) of the vars this block declares, created in the scope that runs it
        self.var_descs = [(v.name, v.persistable) for v in block.desc.vars]
        self.binding = None  # binding.bind's cache: (its scope, weakly; the chain's versions; the bound ops; ...)
        # feed ops: fed name -> (feed-list variable, column); declared (dtype, shape) per fed name
        self.feed_ops = {op.outs[0][1][0]: (op.ins[0][1][0], op.attrs["col"]) for op in self.ops
                         if op.type == "feed"}
        self.feed_decls: dict[str, tuple | None] = {}
        self.declared = [n for n, _ in self.var_descs]
        # the tensor arrays a run builds up entry by entry: each run starts them empty, as Paddle's executor
        # does (its run-local scope), or a shorter second run would keep the first one's tail
        self.fresh_arrays = [v.name for v in block.desc.vars
                             if not v.persistable and v.type.type == pb.VarType.LOD_TENSOR_ARRAY]
        # block 0 of a program whose runs split ops into parts on the CPU's cores (kernelcore/runtime/cpu_parts.py)
        self.split_run = block_idx == 0 and cpu_parts.wants_parts(
            get_op_def(t) for t in {op.type for b in program.desc.blocks for op in b.ops} if has_op(t))
        # The bound form of each op with names in place of Variables (binding swaps them in), and the
        # first use of each name in op order (an input seen first must exist; an output may be created).
        self.layout = []
        self.first_uses = []
        seen = set()
        for op in self.ops:
            for specs, is_output in ((op.ins, False), (op.outs, True)):
                for slot, names, _ in specs:
                    for n in names:
                        if n not in seen:
                            seen.add(n)
                            self.first_uses.append((n, op, slot, is_output))
            ins_spec = tuple(names if dup else (names[0] if names else None) for _, names, dup in op.ins)
            outs_spec = tuple(names if dup else (names[0] if names else None) for _, names, dup in op.outs)
            simple = all(type(n) is str for n in ins_spec)
            single = outs_spec[0] if len(outs_spec) == 1 and type(outs_spec[0]) is str else None
            self.layout.append((op, ins_spec, outs_spec, simple, tuple(op.in_names) + tuple(op.out_names), single))
        self.template = None  # (parent scope, its chain versions, outer name -> Variable, local names, set)
        self.read_at_start = plan_derived_records(self.ops)


def plan_derived_records(ops) -> tuple:
    """Decide, once per block, where a traced run finds each input's (shape, dtype) (events.BlockRun):
    from the op in the same block run that wrote it last (no control-flow op in between, which could
    have written it from a sub-block), from what the run read when it began (nothing before it in the
    block wrote it, and no control-flow op ran before it), or else measured when the op runs. Sets each
    op's `in_sources` and `recorded` (the input names measured, after its outputs) and returns the names
    read at the start of the run. Only outputs and the last kind are measured per op: in a chain, one
    value per op instead of three."""
    last_writer: dict[str, tuple] = {}   # name -> (op index, output position, control-flow ops up to it)
    at_start: dict[str, int] = {}
    control_flow = 0                     # control-flow ops seen so far
    for i, op in enumerate(ops):
        sources, recorded = [], []
        for name in op.in_names:
            w = last_writer.get(name)
            if w is not None and w[2] == control_flow:  # no control-flow op between writer and reader
                sources.append((events.FROM_WRITER, w[0], w[1]))
            elif w is None and control_flow == 0:
                sources.append((events.FROM_START, at_start.setdefault(name, len(at_start))))
            else:
                sources.append((events.FROM_RECORD, len(recorded)))
                recorded.append(name)
        op.in_sources, op.recorded = tuple(sources), tuple(recorded)
        if op.is_gen:
            control_flow += 1
        for j, name in enumerate(op.out_names):
            last_writer[name] = (i, j, control_flow)
    return tuple(at_start)
