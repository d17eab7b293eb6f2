"""The shape a ProgramDesc's blocks must have before anything walks or runs them: a tree of blocks, no block
running itself or its runners, bounded counts and depths (docs/ENGINEERING.md, "Limits and guarantees").

Paddle's own programs nest a few blocks deep and hold at most a few hundred; the limits only stop hostile files
before a walk or a run meets them."""
from __future__ import annotations

from . import attrs as attrlib
from ..errors import KernelcoreError, LoadError
from .proto import framework_pb2 as pb
from .registry import COMMON_ATTRS, get_op_def

A = pb.AttrType
MAX_BLOCKS = 65_536
MAX_NESTING_DEPTH = 100  # both the parent chain and the chain of ops running blocks that run blocks


def block_refs(op_desc) -> list[tuple[str, int]]:
    """(attribute name, block index) of each block an op's BLOCK/BLOCKS attributes name."""
    out = []
    for a in op_desc.attrs:
        if a.type == A.BLOCK:
            out.append((a.name, a.block_idx))
        elif a.type == A.BLOCKS:
            out.extend((a.name, j) for j in a.blocks_idx)
    return out


def check_structure(desc: pb.ProgramDesc, source: str = "program", error=LoadError, attr_types=None) -> None:
    """Reject a ProgramDesc whose blocks do not form a tree, name blocks that are absent, nest deeper than
    MAX_NESTING_DEPTH, number more than MAX_BLOCKS, run each other in a cycle (an op running its own
    block, or 1 -> 2 -> 1), or give a block attribute (sub_block) of a known op another attribute type.

    Linear in the program's size and without recursion; `error` is the exception type raised (LoadError
    for files, ProgramError for programs built in Python). `attr_types` (per block, per op: its attributes'
    types, as op_reads.attr_types reads them from a file's twin parse): the attributes of an op are looked
    at only where a block attribute may be (an op type that takes one, or a BLOCK/BLOCKS type among them),
    instead of every attribute of every op."""
    n = len(desc.blocks)
    if n == 0:
        raise error(f"{source}: the program has no blocks")
    if n > MAX_BLOCKS:
        raise error(f"{source}: the program has {n} blocks; kernelcore accepts at most {MAX_BLOCKS}")
    depth = [0] * n
    runs: list[list[int]] = [[] for _ in range(n)]  # block -> the blocks its ops run
    for i, b in enumerate(desc.blocks):
        if b.idx != i:
            raise error(f"{source}: block at position {i} says its idx is {b.idx}")
        if i == 0 and b.parent_idx != -1:
            raise error(f"{source}: block 0 must have parent -1, has {b.parent_idx}")
        if i > 0:
            if not 0 <= b.parent_idx < i:
                raise error(f"{source}: block {i} has parent {b.parent_idx}; a parent must be an earlier block")
            depth[i] = depth[b.parent_idx] + 1
            if depth[i] > MAX_NESTING_DEPTH:
                raise error(f"{source}: block {i} is nested {depth[i]} blocks deep; kernelcore accepts at most "
                            f"{MAX_NESTING_DEPTH}")
        block_attrs_of: dict[str, dict] = {}  # op type -> its block attributes' names -> their type
        types_of = attr_types[i] if attr_types is not None else None
        for k, op in enumerate(b.ops):
            must = block_attrs_of.get(op.type)
            if must is None:
                must = block_attrs_of[op.type] = _block_attr_types(op.type)
            if types_of is not None and not must:
                ts = types_of[k]
                if _A_BLOCK not in ts and _A_BLOCKS not in ts:
                    continue  # nothing here names a block, nor must
            for a in op.attrs:
                name = a.name
                t = a.type
                if t == _A_BLOCK:
                    idxs = [a.block_idx]
                elif t == _A_BLOCKS:
                    idxs = list(a.blocks_idx)
                else:
                    if must and name in must:
                        # a known op's block attribute stored as another type (an INT 0 would run block 0)
                        raise error(f"{source}: op {op.type!r} (block {i}, op #{k}) attribute {name!r} must be "
                                    f"of type {attrlib.type_name(must[name])}, got {attrlib.type_name(t)}")
                    continue
                for j in idxs:
                    if not 0 < j < n:
                        raise error(f"{source}: op {op.type!r} (block {i}, op #{k}) attribute "
                                    f"{a.name!r} names block {j}, but the program has {n} blocks")
                    if j == i:
                        raise error(f"{source}: op {op.type!r} (block {i}, op #{k}) attribute {a.name!r} "
                                    f"runs block {i}, the block that holds the op: it would run itself forever")
                    runs[i].append(j)
    _check_run_graph(desc, runs, source, error)


_A_BLOCK, _A_BLOCKS = attrlib.T_BLOCK, attrlib.T_BLOCKS


def _block_attr_types(op_type: str) -> dict:
    """The attributes a known op type takes as blocks (name -> BLOCK or BLOCKS); {} for an unknown type
    (the executor reports it when it meets the op)."""
    try:
        op_def = get_op_def(op_type)
    except KernelcoreError:
        return {}
    specs = {**COMMON_ATTRS, **op_def.attrs}  # as OpDef.attr_spec: the op's own first
    return {n: s.type for n, s in specs.items() if s.type in (_A_BLOCK, _A_BLOCKS)}


def _check_run_graph(desc, runs: list[list[int]], source: str, error) -> None:
    """No cycle among 'an op of block i runs block j', and no chain of such runs longer than
    MAX_NESTING_DEPTH (Kahn's algorithm: linear, iterative)."""
    n = len(runs)
    indeg = [0] * n
    for js in runs:
        for j in js:
            indeg[j] += 1
    ready = [b for b in range(n) if indeg[b] == 0]
    chain = [0] * n
    done = 0
    while ready:
        b = ready.pop()
        done += 1
        for j in runs[b]:
            if chain[b] + 1 > chain[j]:
                chain[j] = chain[b] + 1
                if chain[j] > MAX_NESTING_DEPTH:
                    raise error(f"{source}: block {j} is run through a chain of {chain[j]} ops that run "
                                f"blocks; kernelcore accepts at most {MAX_NESTING_DEPTH}")
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if done < n:
        cyc = _one_cycle(runs, [b for b in range(n) if indeg[b] > 0])
        where = []
        for b, j in zip(cyc, cyc[1:]):
            k, op = next((k, op) for k, op in enumerate(desc.blocks[b].ops)
                         if any(x == j for _, x in block_refs(op)))
            where.append(f"op {op.type!r} (block {b}, op #{k}) runs block {j}")
        raise error(f"{source}: blocks run each other in a cycle ({' -> '.join(map(str, cyc))}): "
                    f"{'; '.join(where)}")


def _one_cycle(runs, left: list[int]) -> list[int]:
    """A cycle among the blocks Kahn's algorithm could not order, as [b0, b1, ..., b0]. Each of them has
    a predecessor among them, so walking predecessors must come back to a block already seen."""
    inside = set(left)
    pred = {}
    for b in left:
        for j in runs[b]:
            if j in inside:
                pred.setdefault(j, b)
    b, seen, path = left[0], {}, []
    while b not in seen:
        seen[b] = len(path)
        path.append(b)
        b = pred[b]
    cyc = path[seen[b]:] + [b]
    cyc.reverse()
    return cyc
