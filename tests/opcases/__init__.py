"""Oracle cases for op kernels: each runs one op in a one-op program and compares
its outputs with a NumPy reference written independently of the kernel.

A family module (math.py, tensor.py, ...) defines CASES, a list of Case. The CPU
runner (tests/test_ops.py) and the GPU runner (tests/test_ops_gpu.py) both use
them, so every GPU kernel is checked against the same references.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import kernelcore as kc


@dataclass
class Case:
    op: str
    inputs: dict[str, Any]                 # slot -> array, or list of arrays for duplicable slots
    expected: Callable[..., dict]          # f(**inputs, **attrs) -> {out slot: array or list}
    attrs: dict = field(default_factory=dict)
    id: str = ""
    rtol: float = 1e-6
    atol: float = 1e-6
    check: tuple = ()                      # output slots to compare; () = every slot `expected` returns
    random: bool = False                   # outputs are random: `expected` checks properties itself

    def __str__(self) -> str:
        return self.id or self.op


def build(case: Case):
    """A program holding one `case.op` op; returns (program, feed, {out slot: [names]})."""
    prog = kc.Program()
    block = prog.global_block()
    feed, ins = {}, {}
    for slot, value in case.inputs.items():
        values = value if isinstance(value, list) else [value]
        names = []
        for i, v in enumerate(values):
            v = np.asarray(v)
            name = f"{slot}_{i}"
            block.create_var(name, v.shape, v.dtype)
            feed[name] = v
            names.append(name)
        ins[slot] = names
    opdef = kc.get_op_def(case.op)
    outs = {}
    for s in opdef.outputs:
        n = 1
        if s.duplicable:
            n = case.attrs.get("num") or len(case.attrs.get("sections", [])) or 1
        outs[s.name] = [f"{s.name}_out_{i}" for i in range(n)]
    block.append_op(case.op, inputs=ins, outputs=outs, attrs=case.attrs)
    return prog, feed, outs


def run(case: Case, place=None) -> dict:
    """Run the case's op on `place`; return {out slot: NumPy array (or list of arrays)}."""
    prog, feed, outs = build(case)
    exe = kc.Executor(place or kc.CPUPlace())
    exe.seed(0)
    scope = kc.Scope()
    names = [n for ns in outs.values() for n in ns]
    exe.run(prog, feed=feed, fetch_list=[], scope=scope)
    result = {}
    for slot, ns in outs.items():
        vals = []
        for n in ns:
            v = scope.find_var(n).value
            vals.append(kc.runtime.place.to_host(v) if v is not None else None)
        dup = kc.get_op_def(case.op).output_slot(slot).duplicable
        result[slot] = vals if dup else vals[0]
    return result


def compare(case: Case, got: dict) -> None:
    inputs = {k: (v if isinstance(v, list) else np.asarray(v)) for k, v in case.inputs.items()}
    want = case.expected(**inputs, **case.attrs)
    if case.random:
        return  # `expected` asserted the properties itself... of the inputs only; see random cases
    for slot, w in want.items():
        if case.check and slot not in case.check:
            continue
        g = got[slot]
        if isinstance(w, list):
            assert len(g) == len(w), f"{case}: {slot} has {len(g)} parts, want {len(w)}"
            for gi, wi in zip(g, w):
                _close(case, slot, gi, wi)
        else:
            _close(case, slot, g, w)


def _close(case, slot, g, w) -> None:
    w = np.asarray(w)
    assert g is not None, f"{case}: output {slot} was not written"
    assert g.shape == w.shape, f"{case}: {slot} shape {g.shape}, want {w.shape}"
    assert g.dtype == w.dtype, f"{case}: {slot} dtype {g.dtype}, want {w.dtype}"
    np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol, err_msg=f"{case}: {slot}")


def all_cases() -> list[Case]:
    import importlib
    import pkgutil
    cases = []
    for m in pkgutil.iter_modules(__path__):
        cases.extend(importlib.import_module(f"{__name__}.{m.name}").CASES)
    return cases
