"""Binding a prepared block to a scope: its names resolved to Variables (created where the block declares them),
cached while no scope on the chain gains or loses a name, and each op's runner made for them."""
from __future__ import annotations

import time
import weakref

from . import events
from ..errors import OpRunError
from .events import RECORD_VALUES
from .prepared import PreparedBlock
from .runner import make_runner
from .scope import Scope

_perf = time.perf_counter_ns


def _chain_versions(scope: Scope) -> tuple:
    out = []
    s = scope
    while s is not None:
        out.append(s.version)
        s = s.parent
    return tuple(out)


def bind(run, prepared: PreparedBlock, scope: Scope, root_block: bool, need_io: bool = False):
    """Create the block's variables in `scope` and resolve every op's names to Variables. What a record
    reads is bound only for runs that record it: `level` 0 unobserved, 1 the derived records' measured
    Variables, 2 also every input and output (records holding values; a run from the middle of a block)."""
    cached = prepared.binding
    observed = bool(run.observers)
    level = 0 if not observed else 2 if (need_io or run.record_mode is RECORD_VALUES) else 1
    if (cached is not None and cached[0]() is scope and cached[1] == _chain_versions(scope)
            and cached[4] >= level):
        return cached[2], cached[3]
    names = _names_from_template(run, prepared, scope, observed) if not root_block else None
    if names is None:
        names = _resolve_names(run, prepared, scope, root_block, observed)
    bound = []
    for op, ins_spec, outs_spec, simple, io_names, single in prepared.layout:
        if simple:
            ins = tuple([names[n] for n in ins_spec])
        else:
            ins = tuple([names[n] if type(n) is str else
                         tuple([names[x] for x in n]) if n is not None else None for n in ins_spec])
        outs = tuple([names[n] if type(n) is str else
                      tuple([names[x] for x in n]) if n is not None else None for n in outs_spec])
        single_var = names[single] if single is not None else None
        # a run that records values keeps references to what ops read and wrote: nothing is donated there
        bound.append((op, None if op.is_gen else make_runner(op, ins, outs, simple, single_var, level < 2), ins, outs,
                      tuple([names[n] for n in io_names]) if level == 2 else None,  # what records may carry
                      # what a traced run measures per op (events.BlockRun): a lone Variable (most ops: their
                      # one output, already at hand), or a tuple of them; unobserved runs need none
                      None if not observed else single_var if single_var is not None and not op.recorded
                      else _measured(tuple([names[n] for n in op.out_names + list(op.recorded)]))))
    at_start = tuple([names[n] for n in prepared.read_at_start])
    prepared.binding = (_forget_with(scope, prepared, "binding"), _chain_versions(scope), bound, at_start, level)
    return bound, at_start


def _measured(variables: tuple):
    return variables[0] if len(variables) == 1 else variables



def _forget_with(scope: Scope, prepared: PreparedBlock, slot: str) -> weakref.ref:
    """A weak reference to `scope` that, when the scope goes, clears the cache entry `slot` of `prepared`
    made for it (so a cached binding keeps neither the scope nor its variables' values alive)."""
    pref = weakref.ref(prepared)

    def gone(ref):
        p = pref()
        if p is not None:
            entry = getattr(p, slot)
            if entry is not None and entry[0] is ref:
                setattr(p, slot, None)
    return weakref.ref(scope, gone)


def _resolve_names(run, prepared, scope, root_block, observed) -> dict:
    """name -> Variable for every name the block's ops use: the block's declared variables are created
    in `scope` (persistable ones of block 0 found in any ancestor first), outputs nobody declared are
    created here too, and an input found nowhere is an error naming the op."""
    for name, persistable in prepared.var_descs:
        v = (scope.find_var(name) if (persistable and root_block) else scope.local_var(name))
        if v is None:
            scope.var(name)
            if observed:
                run.emit_var_create(scope.id, prepared.block_idx, name)
    find = scope.find_var
    names = {}
    for name, op, slot, is_output in prepared.first_uses:
        v = find(name)
        if v is None:
            if not is_output:
                raise OpRunError(f"input {slot!r} names variable {name!r}, which neither the program "
                                 f"declares nor the scope holds", op_type=op.type, block_idx=op.block,
                                 op_idx=op.idx, var_name=name)
            v = scope.var(name)
            if observed:
                run.emit_var_create(scope.id, prepared.block_idx, name)
        names[name] = v
    if scope.parent is not None:
        # remember which names live outside this scope: the next kid of the same parent (the next
        # timestep's scope) then only creates its locals
        local = [n for n in names if scope.holds(n)]
        outer = {n: v for n, v in names.items() if not scope.holds(n)}
        prepared.template = (_forget_with(scope.parent, prepared, "template"), _chain_versions(scope.parent),
                             outer, local, frozenset(local))
    return names


def _names_from_template(run, prepared, scope, observed) -> dict | None:
    t = prepared.template
    if t is None or t[0]() is not scope.parent or t[1] != _chain_versions(scope.parent):
        return None
    _, _, outer, local, local_set = t
    have = scope.local_table
    for n in have:
        if n not in local_set:
            return None  # something bound here shadows an outer name: resolve from scratch
    names = dict(outer)
    created = []
    for n in local:
        v = have.get(n)
        if v is None:
            v = scope.var(n)
            created.append(n)
        names[n] = v
    for n in prepared.declared:  # declared but unused by any op: still created, as the block declares it
        if n not in names and n not in have:
            scope.var(n)
            created.append(n)
    if observed and created:  # a step scope's locals: one event for the batch, not one per name
        run.take_plain(events.vars_create(run.next_seq(), _perf(), scope.id, prepared.block_idx, tuple(created)))
    return names
