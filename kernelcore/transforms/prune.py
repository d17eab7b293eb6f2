"""prune: the minimal program that computes some target variables.

`prune(program, targets, feeds)` walks block 0's ops backwards from the targets and keeps
an op iff it writes a variable still needed at that point; the op's inputs become needed.
A kept op's writes stop being needed before it (the last writer before a reader is the
one that matters), except for ops with sub-blocks, which may write only some of their
outputs (a branch not taken, a loop run zero times), so earlier writers stay needed too.
An in-place op (Out is also an input) keeps the writer before it, because its inputs are
added after its outputs are dropped.

Sub-blocks (attributes of type BLOCK or BLOCKS) are kept whole when their op is kept, and
the outer variables their ops read or write (names no block from the sub-block down to
the reading op declares) count as the op's own inputs and outputs. A loop body therefore
keeps every writer in it, and the outer writers before the loop of everything it reads.
A sub-block whose op is not kept is removed and the remaining blocks are renumbered.

`feeds` are cut points: their values come from outside, so an op that writes only fed
variables is not needed (Paddle's `_prune_with_input`). `fetch` ops are kept when they
fetch a target and `feed` ops when their output is read; both get dense `col`s again.

The input program is never changed; the descs are copied. Nothing here needs the op
registry, so programs with ops kernelcore cannot run (yet) prune too.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ..ir.attrs import T_BLOCK, T_BLOCKS, T_VAR, T_VARS
from ..ir.node_ids import op_id, var_id
from ..errors import ProgramError
from ..ir.program import Program, Variable
from ..ir.structure import check_structure
from ..ir.proto import framework_pb2 as pb


@dataclass
class PruneResult:
    """What `prune` made and what it left out. Op and block positions are indices."""

    program: Program
    kept: dict = field(default_factory=dict)          # (new block, new op) -> (old block, old op)
    removed_ops: list = field(default_factory=list)   # (old block, old op), in program order
    removed_vars: list = field(default_factory=list)  # (old block, name), in declaration order
    block_map: dict = field(default_factory=dict)     # old block -> new block, or None if removed
    num_ops: int = 0                                  # ops in the original program, all blocks

    @property
    def removed_blocks(self) -> list[int]:
        return [b for b, nb in sorted(self.block_map.items()) if nb is None]

    def kept_ops(self, block: int = 0) -> list[int]:
        """The original indices of the ops kept from original block `block`, in order."""
        return sorted(oi for ob, oi in self.kept.values() if ob == block)

    def to_json(self) -> dict:
        """The plain form ProgramJSON's "pruned" field holds: removed op and var ids, new op id -> old op id."""
        return {"removed_ops": [op_id(b, i) for b, i in self.removed_ops],
                "removed_vars": [var_id(b, n) for b, n in self.removed_vars],
                "kept_map": {op_id(*new): op_id(*old) for new, old in sorted(self.kept.items())}}

    def summary(self) -> str:
        nb = self.program.num_blocks
        text = (f"kept {len(self.kept)} of {self.num_ops} ops in {_n(nb, 'block')}; "
                f"removed {_n(len(self.removed_ops), 'op')}, {_n(len(self.removed_vars), 'var')}")
        if self.removed_blocks:
            text += f", {_n(len(self.removed_blocks), 'block')}"
        return text

    __str__ = summary

    def __repr__(self) -> str:
        return f"<PruneResult: {self.summary()}>"


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


# ---------------------------------------------------------------------------
def prune(program: Program, targets, feeds=None) -> PruneResult:
    """The ops and variables of `program` needed to compute `targets` (names or Variables of
    block 0), given the values of `feeds` (names, Variables, or a feed dict's keys) from
    outside. Returns a PruneResult whose `.program` is a new Program; `program` is left as it
    was. Unknown names raise ProgramError."""
    if not isinstance(program, Program):
        raise TypeError(f"prune takes a Program, got {type(program).__name__}")
    desc = program.desc
    # block tree, limits, no cycle of blocks running each other: the walks below can then trust the indices
    check_structure(desc, "prune", ProgramError)
    block0 = desc.blocks[0]
    declared0 = {v.name for v in block0.vars}
    target_names = _names(targets, "targets")
    if not target_names:
        raise ProgramError("prune needs at least one target variable")
    feed_names = _names(feeds, "feeds")
    for kind, names in (("target", target_names), ("feed", feed_names)):
        for n in names:
            if n not in declared0:
                raise ProgramError(_unknown(desc, kind, n, declared0))
    targets_set, feeds_set = set(target_names), set(feed_names)

    io = _SubBlockIO(desc)
    kept0 = _walk_block0(desc, io, targets_set, feeds_set)

    # blocks: 0, plus every block reachable from a kept op (sub-blocks are kept whole)
    kept_blocks = {0}
    todo = [j for i in kept0 for j in _sub_blocks(desc, 0, i)]
    while todo:
        b = todo.pop()
        if b in kept_blocks:
            continue
        kept_blocks.add(b)
        todo.extend(j for i in range(len(desc.blocks[b].ops)) for j in _sub_blocks(desc, b, i))

    # block 0's variables: those a kept op (or a kept sub-block, from outside) refers to
    used0 = targets_set | feeds_set
    for i in kept0:
        op = block0.ops[i]
        used0.update(_op_names(op))
        for j in _sub_blocks(desc, 0, i):
            r, w = io.outer(j)
            used0 |= r | w

    return _build(program, kept0, kept_blocks, used0)


def _names(items, what: str) -> list[str]:
    if items is None:
        return []
    if isinstance(items, (str, Variable)):
        items = [items]
    out = []
    for it in items:
        n = it.name if isinstance(it, Variable) else it
        if not isinstance(n, str) or not n:
            raise TypeError(f"prune {what} are variable names or Variables, got {it!r:.60}")
        if n not in out:
            out.append(n)
    return out


def _unknown(desc, kind: str, name: str, declared0: set) -> str:
    elsewhere = [b.idx for b in desc.blocks[1:] if any(v.name == name for v in b.vars)]
    if elsewhere:
        return (f"prune {kind} {name!r} is declared in block {elsewhere[0]}, not in block 0: "
                f"targets and feeds are variables of the global block")
    close = difflib.get_close_matches(name, sorted(declared0), n=3)
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    return f"prune {kind} {name!r} is not a variable of block 0{hint}"


# ---------------------------------------------------------------------------
def _sub_blocks(desc, block_idx: int, op_idx: int) -> list[int]:
    """The block indices an op's BLOCK/BLOCKS attributes name, checked."""
    return _attr_refs(desc, block_idx, op_idx, desc.blocks[block_idx].ops[op_idx])[0]


def _attr_refs(desc, block_idx: int, op_idx: int, op) -> tuple[list[int], list[str]]:
    """One look at each attribute of `op`: (the block indices its BLOCK/BLOCKS attributes name, checked;
    the variable names its VAR/VARS attributes name)."""
    subs: list[int] = []
    names: list[str] = []
    for a in op.attrs:
        t = a.type
        if t == T_BLOCK or t == T_BLOCKS:
            for j in ([a.block_idx] if t == T_BLOCK else list(a.blocks_idx)):
                if not 0 < j < len(desc.blocks) or j == block_idx:
                    raise ProgramError(f"op {op.type!r} (block {block_idx}, op #{op_idx}) attribute {a.name!r} "
                                       f"names block {j}, but the program has {len(desc.blocks)} blocks")
                subs.append(j)
        elif t == T_VAR:
            names.append(a.var_name)
        elif t == T_VARS:
            names.extend(a.vars_name)
    return subs, names


def _attr_var_names(op) -> list[str]:
    """The variable names an op's VAR/VARS attributes name."""
    out: list[str] = []
    for a in op.attrs:
        t = a.type
        if t == T_VAR:
            out.append(a.var_name)
        elif t == T_VARS:
            out.extend(a.vars_name)
    return out


def _op_names(op) -> set[str]:
    """Every variable name an op refers to: its slots, and VAR/VARS attributes."""
    names = {a for v in op.inputs for a in v.arguments}
    names.update(a for v in op.outputs for a in v.arguments)
    names.update(_attr_var_names(op))
    names.discard("")
    return names


def _reads(op, attr_names=None) -> list[str]:
    """The names `op` reads: its input slots, then its VAR/VARS attributes (`attr_names`, when already
    read by _attr_refs)."""
    out = [a for v in op.inputs for a in v.arguments]
    out.extend(_attr_var_names(op) if attr_names is None else attr_names)
    return [n for n in out if n]


def _writes(op) -> list[str]:
    return [a for v in op.outputs for a in v.arguments if a]


class _SubBlockIO:
    """The outer variables a sub-block (with the blocks nested in it) reads and writes:
    names used by its ops that no block from the sub-block down to the op declares."""

    def __init__(self, desc):
        self.desc = desc
        self._memo: dict[int, tuple[frozenset, frozenset]] = {}

    def outer(self, root: int) -> tuple[frozenset, frozenset]:
        hit = self._memo.get(root)
        if hit is None:
            reads, writes = set(), set()
            self._visit(root, frozenset(), reads, writes, (root,))
            hit = self._memo[root] = (frozenset(reads), frozenset(writes))
        return hit

    def _visit(self, root: int, local: frozenset, reads: set, writes: set, path: tuple) -> None:
        # an explicit stack instead of recursion: the nesting depth costs no Python frames
        stack = [(root, local, path)]
        while stack:
            b, local, path = stack.pop()
            block = self.desc.blocks[b]
            local = local | {v.name for v in block.vars}
            for i, op in enumerate(block.ops):
                reads.update(n for n in _reads(op) if n not in local)
                writes.update(n for n in _writes(op) if n not in local)
                for j in _sub_blocks(self.desc, b, i):
                    if j in path:
                        raise ProgramError(f"op {op.type!r} (block {b}, op #{i}) runs block {j}, which "
                                           f"contains it: the blocks form a cycle")
                    stack.append((j, local, path + (j,)))


def _walk_block0(desc, io: _SubBlockIO, targets: set, feeds: set) -> list[int]:
    """Indices of the block-0 ops to keep, in order."""
    ops = desc.blocks[0].ops
    needed = set(targets - feeds)       # variables whose current value a later kept op reads
    needed_feeds = set(targets & feeds)  # fed variables read later: only a feed op may write them
    kept = []
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        subs, attr_names = _attr_refs(desc, 0, i, op)
        reads, writes = _reads(op, attr_names), _writes(op)
        for j in subs:
            r, w = io.outer(j)
            reads.extend(sorted(r))
            writes.extend(sorted(w))
        if op.type == "fetch":
            keep = any(n in targets for n in reads)
        elif op.type == "feed":
            keep = any(n in needed or n in needed_feeds for n in writes)
        else:
            keep = any(n in needed for n in writes)
        if not keep:
            continue
        kept.append(i)
        if not subs and op.type != "fetch":  # fetch reads-modifies-writes the fetch list
            needed.difference_update(writes)
            if op.type == "feed":
                needed_feeds.difference_update(writes)
        for n in reads:
            (needed_feeds if n in feeds else needed).add(n)
    kept.reverse()
    return kept


# ---------------------------------------------------------------------------
def _build(program: Program, kept0: list[int], kept_blocks: set, used0: set) -> PruneResult:
    desc = program.desc
    new = pb.ProgramDesc()
    new.CopyFrom(desc)  # version, op_version_map and whatever else the ProgramDesc holds
    del new.blocks[:]
    order = sorted(kept_blocks)
    block_map = {b: None for b in range(len(desc.blocks))}
    block_map.update({b: k for k, b in enumerate(order)})

    def kept_ancestor(b: int) -> int:
        while b >= 0 and block_map.get(b) is None:
            b = desc.blocks[b].parent_idx
        return block_map[b] if b >= 0 else -1

    res = PruneResult(program=None, block_map=block_map,
                      num_ops=sum(len(b.ops) for b in desc.blocks))
    kept0_set = set(kept0)
    for ob, old in enumerate(desc.blocks):
        nb_idx = block_map[ob]
        if nb_idx is None:
            res.removed_ops.extend((ob, i) for i in range(len(old.ops)))
            res.removed_vars.extend((ob, v.name) for v in old.vars)
            continue
        nb = new.blocks.add()
        nb.idx = nb_idx
        nb.parent_idx = -1 if ob == 0 else kept_ancestor(old.parent_idx)
        if old.HasField("forward_block_idx"):
            fwd = old.forward_block_idx
            nb.forward_block_idx = block_map.get(fwd) if block_map.get(fwd) is not None else -1
        for v in old.vars:
            if ob != 0 or v.name in used0:
                nb.vars.add().CopyFrom(v)
            else:
                res.removed_vars.append((ob, v.name))
        for i, op in enumerate(old.ops):
            if ob == 0 and i not in kept0_set:
                res.removed_ops.append((ob, i))
                continue
            res.kept[(nb_idx, len(nb.ops))] = (ob, i)
            nop = nb.ops.add()
            nop.CopyFrom(op)
            for a in nop.attrs:
                t = a.type
                if t == T_BLOCK:
                    a.block_idx = block_map[a.block_idx]
                elif t == T_BLOCKS:
                    a.blocks_idx[:] = [block_map[j] for j in a.blocks_idx]
    _dense_cols(new.blocks[0])
    pruned = Program(new)
    pruned.continue_names_of(program)
    res.program = pruned
    return res


def _dense_cols(block) -> None:
    """Renumber the `col` of the kept feed (per feed list) and fetch (per fetch list) ops
    0, 1, ... in their old order, so the lists they fill have no holes."""
    groups: dict = {}
    for op in block.ops:
        if op.type not in ("feed", "fetch"):
            continue
        holder = (op.inputs if op.type == "feed" else op.outputs)
        name = next((v.arguments[0] for v in holder if v.arguments), None)
        col = next((a for a in op.attrs if a.name == "col"), None)
        if col is not None:
            groups.setdefault((op.type, name), []).append(col)
    for cols in groups.values():
        rank = {c: k for k, c in enumerate(sorted({a.i for a in cols}))}
        for a in cols:
            a.i = rank[a.i]
