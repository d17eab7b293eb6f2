"""Where a block's variables are used, as arrays: how a run first meets each one, which group each sits in,
and the edges between groups that the uses imply (the outline of a big program, program_parts.py).

A big program uses its variables a few times per op. Walked name by name in Python, placing variables,
counting edges and finding the first meetings each cost a pass of Python per use; here each use becomes an
entry of a few integer arrays (variable, op, input or output) once, and the rest is NumPy. The per-group lists
the views fetch (a group's edges to ops elsewhere) are made when a group is asked for, not for every group.
"""
from __future__ import annotations

from itertools import chain

import numpy as np


class _Index(dict):
    """name -> index, -1 for a name not declared here (a lookup stays in C for the names that are)."""

    def __missing__(self, name):
        return -1


class BlockUses:
    """Every use of a declared variable by an op of one block: `var` (index into `names`), `op` (index),
    `phase` (0 input, 1 output), in program order (op by op, an op's inputs before its outputs, names in
    slot order). Names a block does not declare (a parent block's) are left out."""

    def __init__(self, records: list, names: list[str]):
        self.names = names
        self.n_ops = n = len(records)
        index = _Index((nm, k) for k, nm in enumerate(names))
        ins = [r[1] for r in records]
        outs = [r[2] for r in records]
        n_in = np.fromiter(map(len, ins), np.int64, n)
        n_out = np.fromiter(map(len, outs), np.int64, n)
        flat_in = list(chain.from_iterable(ins))
        flat_out = list(chain.from_iterable(outs))
        look = index.__getitem__
        var = np.concatenate([np.fromiter(map(look, flat_in), np.int64, len(flat_in)),
                              np.fromiter(map(look, flat_out), np.int64, len(flat_out))])
        ops = np.arange(n, dtype=np.int64)
        op = np.concatenate([np.repeat(ops, n_in), np.repeat(ops, n_out)])
        phase = np.concatenate([np.zeros(len(flat_in), np.int8), np.ones(len(flat_out), np.int8)])
        # program order: by op, inputs before outputs; within those, slot order (a stable sort keeps it)
        order = np.lexsort((phase, op))
        keep = order[var[order] >= 0]
        self.var, self.op, self.phase = var[keep], op[keep], phase[keep]
        # per variable, the position of its first use (len(var): never used); uses are in program order,
        # so that use's op is also the first op that uses it
        self.first = np.full(len(names), len(self.var), np.int64)
        np.minimum.at(self.first, self.var, np.arange(len(self.var), dtype=np.int64))

    def first_meetings(self, op_types: list[str]) -> dict[str, str]:
        """name -> "read" | "fed" | "written": how program order (the execution order of a block that runs
        no other) first meets each used variable."""
        used = np.flatnonzero(self.first < len(self.var))
        at = self.first[used]
        out = {}
        names = self.names
        for k, phase, op in zip(used.tolist(), self.phase[at].tolist(), self.op[at].tolist()):
            out[names[k]] = "read" if phase == 0 else ("fed" if op_types[op] == "feed" else "written")
        return out

    def place(self, inner: list, at_block_level) -> "Placement":
        """Where each variable sits and the edges between groups, given `inner` (each op's innermost group
        id, None at block level) and `at_block_level` (a bool array over `names`: variables kept at block
        level, data). A variable sits in the group of the first op that uses it; one no op uses, or one
        kept at block level, sits at block level."""
        return Placement(self, inner, at_block_level)


class Placement:
    """`vgroup` (name -> group id or None), `vars_in` (group -> names, declaration order), `edges`
    ((writer-side group, reader-side group) -> uses, first-seen order, both groups not None), and
    `ext.get(group)`: [(name, op group, True if the op reads it)] for the variables of `group` used by ops
    in other groups, in program order."""

    def __init__(self, uses: BlockUses, inner: list, at_block_level):
        names = uses.names
        gids = [None]
        gindex = {None: 0}
        for g in inner:
            if g not in gindex:
                gindex[g] = len(gids)
                gids.append(g)
        op_g = np.fromiter(map(gindex.__getitem__, inner), np.int64, uses.n_ops)
        touched = np.flatnonzero(uses.first < len(uses.var))
        vg = np.zeros(len(names), np.int64)
        vg[touched] = op_g[uses.op[uses.first[touched]]]
        vg[np.asarray(at_block_level, bool)] = 0
        groups_of_vars = [gids[k] for k in vg.tolist()]
        self.vgroup = dict(zip(names, groups_of_vars))
        vars_in: dict = {}
        for name, g in zip(names, groups_of_vars):
            vars_in.setdefault(g, []).append(name)
        self.vars_in = vars_in
        # uses that cross from a variable's group to an op's
        gv = vg[uses.var]
        go = op_g[uses.op]
        cross = np.flatnonzero(gv != go)
        c_gv, c_go, c_in = gv[cross], go[cross], uses.phase[cross] == 0
        # edges between groups (data flows writer -> var -> reader), both sides in a group
        both = (c_gv != 0) & (c_go != 0)
        a = np.where(c_in, c_gv, c_go)[both]
        z = np.where(c_in, c_go, c_gv)[both]
        code = a * len(gids) + z
        uniq, first_at, counts = np.unique(code, return_index=True, return_counts=True)
        seen = np.argsort(first_at, kind="stable")
        self.edges = {(gids[int(u) // len(gids)], gids[int(u) % len(gids)]): int(c)
                      for u, c in zip(uniq[seen].tolist(), counts[seen].tolist())}
        self.ext = _External(gids, names, uses.var[cross], c_gv, c_go, c_in)


class _External:
    """A variable group's uses by ops of other groups, made into lists when a group is asked for."""

    def __init__(self, gids, names, var, gv, go, into):
        by_group = np.argsort(gv, kind="stable")  # keeps program order within a group
        self._gids, self._names = gids, names
        self._var, self._go, self._into = var[by_group], go[by_group], into[by_group]
        keys = gv[by_group]
        present, starts = np.unique(keys, return_index=True)
        ends = np.append(starts[1:], len(keys))
        self._slices = {gids[int(g)]: (int(s), int(e)) for g, s, e in zip(present, starts, ends)}
        self._made: dict = {}

    def get(self, group, default=()):
        hit = self._made.get(group)
        if hit is not None:
            return hit
        span = self._slices.get(group)
        if span is None:
            return default
        s, e = span
        names, gids = self._names, self._gids
        hit = [(names[v], gids[g], bool(i)) for v, g, i in
               zip(self._var[s:e].tolist(), self._go[s:e].tolist(), self._into[s:e].tolist())]
        self._made[group] = hit
        return hit
