"""Hostile programs: well-formed ProgramDesc protobufs whose content is hostile (built with
kernelcore.ir.proto.framework_pb2, not hand-written bytes). Each entry is name -> (bytes, feed dict).

`python tests/fuzz/hostile_corpus.py OUT_DIR` writes them as OUT_DIR/<name>.pdmodel, the seed corpus of the
coverage-guided fuzzer (tests/fuzz/fuzz_pipeline.py). tests/test_hostile.py runs every one through every
stage (load, text, display, prune, run under a trace) and asserts each stage ends in success or a
kernelcore error.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from kernelcore.ir.proto import framework_pb2 as pb

A = pb.AttrType
VT = pb.VarType


def _var(block, name, dtype=VT.FP32, dims=(2, 3), kind=VT.LOD_TENSOR, persistable=False):
    v = block.vars.add(name=name, persistable=persistable)
    v.type.type = kind
    if kind == VT.LOD_TENSOR:
        v.type.lod_tensor.tensor.data_type = dtype
        v.type.lod_tensor.tensor.dims.extend(dims)
    return v


def _op(block, type_, inputs=(), outputs=(), attrs=()):
    op = block.ops.add(type=type_)
    for slot, names in inputs:
        op.inputs.add(parameter=slot, arguments=list(names))
    for slot, names in outputs:
        op.outputs.add(parameter=slot, arguments=list(names))
    for name, kind, value in attrs:
        a = op.attrs.add(name=name, type=kind)
        if kind == A.INT:
            a.i = value
        elif kind == A.BOOLEAN:
            a.b = value
        elif kind == A.BLOCK:
            a.block_idx = value
        elif kind == A.BLOCKS:
            a.blocks_idx.extend(value)
        elif kind == A.STRING:
            a.s = value
        elif kind == A.FLOAT:
            a.f = value
    return op


def _program(n_blocks=1, parents=None):
    d = pb.ProgramDesc()
    for i in range(n_blocks):
        d.blocks.add(idx=i, parent_idx=-1 if i == 0 else (parents[i] if parents else 0))
    return d


def _feed_fetch(d, x="x", out="out", col_feed=0, col_fetch=0):
    b = d.blocks[0]
    _var(b, "feed", kind=VT.FEED_MINIBATCH)
    _var(b, "fetch", kind=VT.FETCH_LIST)
    _op(b, "feed", [("X", ["feed"])], [("Out", [x])], [("col", A.INT, col_feed)])
    return lambda: _op(b, "fetch", [("X", [out])], [("Out", ["fetch"])], [("col", A.INT, col_fetch)])


def elementwise_huge_axis():
    d = _program()
    b = d.blocks[0]
    _var(b, "x", dims=(2, 3))
    _var(b, "y", dims=(3,))
    _var(b, "out", dims=(2, 3))
    _op(b, "elementwise_add", [("X", ["x"]), ("Y", ["y"])], [("Out", ["out"])], [("axis", A.INT, 805306367)])
    return d, {"x": np.ones((2, 3), np.float32), "y": np.ones((3,), np.float32)}


def _cond_chain(n, nested):
    """n blocks; each block i > 0 is run by a conditional_block in block i-1 (nested) or in block 0 (flat)."""
    d = _program(n, [max(i - 1, 0) if nested else 0 for i in range(n)])
    _var(d.blocks[0], "c", dtype=VT.BOOL, dims=(1,))
    for i in range(1, n):
        _var(d.blocks[i], f"v{i}", dims=(1,))
        _op(d.blocks[i - 1 if nested else 0], "conditional_block", [("Cond", ["c"])], [("Scope", [f"s{i}"])],
            [("sub_block", A.BLOCK, i), ("is_scalar_condition", A.BOOLEAN, True)])
        _var(d.blocks[i - 1 if nested else 0], f"s{i}", kind=VT.STEP_SCOPES)
    return d


def deep_nesting():
    return _cond_chain(1200, nested=True), {"c": np.array([False])}


def many_blocks():
    return _cond_chain(3000, nested=False), {"c": np.array([False])}


def _self_runner(cycle):
    """Block 1 holds a conditional_block that runs block 1 (cycle=1) or block 2, whose op runs block 1."""
    d = _program(3, [0, 0, 1])
    _var(d.blocks[0], "c", dtype=VT.BOOL, dims=(1,))
    for blk, target in ((0, 1), (1, 1 if cycle == 1 else 2), (2, 1)):
        if blk == 2 and cycle == 1:
            continue
        _var(d.blocks[blk], f"s{blk}", kind=VT.STEP_SCOPES)
        _op(d.blocks[blk], "conditional_block", [("Cond", ["c"])], [("Scope", [f"s{blk}"])],
            [("sub_block", A.BLOCK, target), ("is_scalar_condition", A.BOOLEAN, True)])
    return d, {"c": np.array([True])}


def block_runs_itself():
    return _self_runner(1)


def blocks_run_each_other():
    return _self_runner(2)


def int_sub_block():
    d = _program(2)
    _var(d.blocks[0], "c", dtype=VT.BOOL, dims=(1,))
    _var(d.blocks[0], "s", kind=VT.STEP_SCOPES)
    _op(d.blocks[0], "conditional_block", [("Cond", ["c"])], [("Scope", ["s"])],
        [("sub_block", A.INT, 0), ("is_scalar_condition", A.BOOLEAN, True)])
    return d, {"c": np.array([True])}


def _dtype_feed(dtype):
    d = _program()
    fetch = _feed_fetch(d)
    _var(d.blocks[0], "x", dtype=dtype)
    _var(d.blocks[0], "out", dtype=dtype)
    _op(d.blocks[0], "scale", [("X", ["x"])], [("Out", ["out"])], [("scale", A.FLOAT, 2.0)])
    fetch()
    return d, {"x": np.ones((2, 3), np.float32)}


def bf16_feed():
    return _dtype_feed(VT.BF16)


def fp8_feed():
    return _dtype_feed(VT.FP8_E4M3FN)


def raw_feed():
    return _dtype_feed(VT.RAW)


def endless_while():
    d = _program(2)
    b0, b1 = d.blocks
    _var(b0, "c", dtype=VT.BOOL, dims=(1,))
    _var(b0, "i", dims=(1,))
    _var(b0, "s", kind=VT.STEP_SCOPES)
    _op(b0, "while", [("X", ["i"]), ("Condition", ["c"])], [("Out", ["i"]), ("StepScopes", ["s"])],
        [("sub_block", A.BLOCK, 1), ("is_test", A.BOOLEAN, True)])
    _op(b1, "scale", [("X", ["i"])], [("Out", ["i"])], [("scale", A.FLOAT, 1.0)])
    return d, {"c": np.array([True]), "i": np.zeros((1,), np.float32)}


def _col(col_feed, col_fetch):
    d = _program()
    fetch = _feed_fetch(d, col_feed=col_feed, col_fetch=col_fetch)
    _var(d.blocks[0], "x")
    _var(d.blocks[0], "out")
    _op(d.blocks[0], "scale", [("X", ["x"])], [("Out", ["out"])], [("scale", A.FLOAT, 2.0)])
    fetch()
    return d, {"x": np.ones((2, 3), np.float32)}


def huge_feed_col():
    return _col(2 ** 31 - 1, 0)


def large_fetch_col():
    return _col(0, 10 ** 8)


def huge_fill_constant():
    d = _program()
    b = d.blocks[0]
    _var(b, "out", dims=(100_000, 100_000))
    op = _op(b, "fill_constant", (), [("Out", ["out"])], [("value", A.FLOAT, 1.0)])
    a = op.attrs.add(name="shape", type=A.LONGS)
    a.longs.extend([100_000, 100_000])
    return d, {}


def terminal_escape_names():
    d = _program()
    b = d.blocks[0]
    evil = "\x1b]0;pwned\x07"
    _var(b, evil)
    _var(b, "out\x1b[2J")
    _op(b, "scale", [("X", [evil])], [("Out", ["out\x1b[2J"])], [("scale", A.FLOAT, 2.0)])
    return d, {evil: np.ones((2, 3), np.float32)}


CORPUS = {f.__name__: f for f in (
    elementwise_huge_axis, deep_nesting, many_blocks, block_runs_itself, blocks_run_each_other, int_sub_block,
    bf16_feed, fp8_feed, raw_feed, endless_while, huge_feed_col, large_fetch_col, huge_fill_constant, terminal_escape_names)}


def build(name: str) -> tuple[bytes, dict]:
    desc, feed = CORPUS[name]()
    return desc.SerializeToString(deterministic=True), feed


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus")
    out.mkdir(parents=True, exist_ok=True)
    for n in CORPUS:
        (out / f"{n}.pdmodel").write_bytes(build(n)[0])
    print(f"wrote {len(CORPUS)} programs to {out}")
