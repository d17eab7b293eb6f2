"""PIR's control flow as kernelcore's: `pd_op.if` and `pd_op.while` regions become sub-blocks (one kid scope per
branch taken or per iteration), the way Paddle's legacy programs hold them, so the debugger steps into them and
time travel and provenance cross iterations.

- if: a conditional_block per branch (the false one under logical_not) writes outer variables, then select_input
  picks each result by the condition.
- while: the carried values are copied into loop variables, the body's block arguments are those variables, and
  its closing yield copies the next condition and values back (through a temporary where a yield would read a loop
  variable already overwritten: a swap).
"""
from __future__ import annotations

from .pir_values import BlockRef, Emit, Value, get_field, op_name, tensor_type, value_id, var_type


def region_ops(r, op, k: int, n_args: int) -> tuple[list, list]:
    """(the block arguments, the ops ending in cf.yield) of region `k` of `op`, whose one block must take `n_args`
    arguments."""
    regions = op.get("regions")
    if not isinstance(regions, list) or k >= len(regions):
        r.fail(f"expected region #{k}")
    blocks = get_field(regions[k], "blocks", list, r)
    if len(blocks) != 1 or not isinstance(blocks[0], dict):
        r.fail(f"region #{k} must hold one block object")
    args = blocks[0].get("args", [])
    if not isinstance(args, list) or len(args) != n_args:
        r.fail(f"region #{k}'s block must take {n_args} argument(s)")
    ops = get_field(blocks[0], "ops", list, r)
    if not ops or not isinstance(ops[-1], dict) or op_name(str(ops[-1].get("#"))) != "cf.yield":
        r.fail(f"region #{k} must end with cf.yield")
    return args, ops


def declare(r, name: str, shape, dtype) -> None:
    r.declared.append((r.cur, name, shape, dtype))


def read_if(r, op, i: int) -> None:
    """pd_op.if -> conditional_block per branch (the false one under logical_not) writing outer variables,
    then select_input per result, as Paddle's legacy cond lowers."""
    where = r.where
    ids = r.operands(op)
    if len(ids) != 1:
        r.fail("pd_op.if takes one operand, its condition")
    cond = r.value(ids[0])
    res = r.results(op)
    stem = r.stem("if")
    not_cond = r.fresh(stem, "not_cond")
    r.extra_types[not_cond] = (cond.shape, "bool")
    r.emit(Emit("logical_not", {"X": [cond.name]}, {"Out": [not_cond]}, {}, i))
    outs = {}
    for k, branch in ((0, "true"), (1, "false")):
        _args, ops = region_ops(r, op, k, 0)
        names = [r.fresh(stem, f"{branch}{j}") for j in range(len(res))]
        for n, (_vid, (shape, dtype, _l)) in zip(names, res):
            declare(r, n, shape, dtype)
        idx, yields = r.sub_block(ops, f"{where} {branch} branch")
        if len(yields) != len(res):
            r.fail(f"the {branch} branch yields {len(yields)} value(s) for {len(res)} result(s)")
        for n, y in zip(names, yields):
            copy_into(r, y, n, idx, i)
        scope = r.fresh(stem, f"{branch}_scope")
        r.extra_types[scope] = ("scopes", None)
        r.emit(Emit("conditional_block", {"Cond": [cond.name if k == 0 else not_cond], "Input": []},
                    {"Out": names, "Scope": [scope]},
                    {"sub_block": BlockRef(idx), "is_scalar_condition": True}, i))
        outs[branch] = names
        r.where = where
    mask = r.fresh(stem, "mask")
    r.extra_types[mask] = (cond.shape, "int32")
    r.emit(Emit("cast", {"X": [cond.name]}, {"Out": [mask]},
                {"in_dtype": var_type("bool"), "out_dtype": var_type("int32")}, i))
    for k in range(len(res)):
        out = r.fresh(stem, f"out{k}")
        r.define(op, k, Value(name=out))
        r.emit(Emit("select_input", {"X": [outs["false"][k], outs["true"][k]], "Mask": [mask]},
                    {"Out": [out]}, {}, i))


def read_while(r, op, i: int) -> None:
    """pd_op.while -> a legacy while over loop variables: the carried operands are copied in, the body's
    block arguments are those variables, and its yield copies the next condition and values back."""
    where = r.where
    ids = r.operands(op)
    if not ids:
        r.fail("pd_op.while takes its condition and the carried values")
    cond, carried = r.value(ids[0]), [r.value(v) for v in ids[1:]]
    res = r.results(op)
    if len(res) != len(carried):
        r.fail(f"{len(res)} result(s) for {len(carried)} carried value(s)")
    args, ops = region_ops(r, op, 0, len(carried))
    stem = r.stem("while")
    cond_var = r.fresh(stem, "cond")
    declare(r, cond_var, cond.shape, cond.dtype)
    copy_into(r, cond, cond_var, r.cur, i)
    loop = []
    for k, v in enumerate(carried):
        name = r.fresh(stem, f"carry{k}")
        declare(r, name, v.shape, v.dtype)
        copy_into(r, v, name, r.cur, i)
        loop.append(name)
    for k, a in enumerate(args):  # the body sees the loop variables under the block arguments' ids
        aid = value_id(a, r)
        if aid in r.values:
            r.fail(f"block argument %{aid} defined twice")
        shape, dtype, _l = tensor_type(a.get("TT"), r)
        r.values[aid] = Value(name=loop[k], shape=shape, dtype=dtype)
    idx, yields = r.sub_block(ops, f"{where} body")
    if len(yields) != 1 + len(carried):
        r.fail(f"the body yields {len(yields)} value(s); expected the condition and {len(carried)}")
    # values a later copy would overwrite before it is read (a swap) go through a temporary first
    staged = []
    for k, y in enumerate(yields[1:]):
        if isinstance(y.name, str) and y.name in loop and loop.index(y.name) != k:
            tmp = r.fresh(stem, f"next{k}")
            copy_into(r, y, tmp, idx, i)
            staged.append((Value(name=tmp, shape=y.shape, dtype=y.dtype), loop[k]))
        else:
            staged.append((y, loop[k]))
    for y, name in staged:
        copy_into(r, y, name, idx, i)
    copy_into(r, yields[0], cond_var, idx, i)
    scopes = r.fresh(stem, "scopes")
    r.extra_types[scopes] = ("scopes", None)
    # is_test false, as Paddle builds a while: the executor keeps the iteration scopes only in a training run
    # (which a gradient reads), so an inference run still drops each as it ends
    r.emit(Emit("while", {"X": list(loop), "Condition": [cond_var]},
                {"Out": list(loop), "StepScopes": [scopes]}, {"sub_block": BlockRef(idx), "is_test": False}, i))
    for k, name in enumerate(loop):
        r.define(op, k, Value(name=name))
    r.where = where


def copy_into(r, v: Value, name: str, block: int, i: int) -> None:
    if isinstance(v.name, list):
        r.fail("control flow over a list of values")
    if v.name == name:
        return
    r.mark_tensor(v)
    outer, r.cur = r.cur, block
    try:
        r.emit(Emit("assign", {"X": [v.name]}, {"Out": [name]}, {}, i))
    finally:
        r.cur = outer
