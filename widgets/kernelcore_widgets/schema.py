"""The shapes of the data between Python and the browser (docs/frontend-contract.md), Python side.

The one description of these shapes is kernelcore/contract.schema.json (tests/test_contract.py checks
real output against it); the TypeScript types and the TypedDicts re-exported here (contract/wire_types.py)
are generated from it. Every string is rendered as text in the browser, never as HTML.

Besides the shapes, this module builds the two values the widgets compute themselves:
`value_preview` (ValuePreview: stats, NaN/Inf counts and a <=16x16 sample of a tensor; a GPU array
is reduced on the GPU and only the sample and the stats are copied to the host, and only when a
preview is asked for) and `scope_json` (ScopeJSON: a scope's variables with previews and roles).
"""
from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from kernelcore.view.display import PROGRAM_MIME, TRACE_MIME  # noqa: F401  (re-exported: one place per side)
from kernelcore.runtime.place import place_of, to_host

from .contract.wire_types import (BlockJSON, ForestVarJSON, GroupJSON, MemoryFlowJSON, OpJSON,  # noqa: F401
                                  ProgramJSON, PrunedJSON, ScopeJSON, StepVarJSON, ValuePreview, VarJSON)

SAMPLE_SIDE = 16  # a sample holds at most SAMPLE_SIDE x SAMPLE_SIDE values


PreviewKind = Literal["heatmap", "sparkline", "scalar"]


# --------------------------------------------------------------------------------------------------------
def _is_tensor(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype")


def _xp(value):
    """The array module of the place `value` lives on (NumPy, CuPy, or the strict stand-in)."""
    return place_of(value).xp


def _host(value):
    return np.asarray(to_host(value))


def _pick(n: int, k: int = SAMPLE_SIDE) -> np.ndarray:
    """At most k indices spread evenly over range(n), first and last included."""
    if n <= k:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, k).round().astype(np.int64))


def sample_indices(shape) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """(row indices, column indices, 2-D shape) of the sample taken from a value of `shape`: the value is
    seen as 2-D (0-d, 1-d and shapes with one axis longer than 1 as one row; n-d as prod(shape[:-1]) rows by shape[-1] columns) and rows and
    columns are picked evenly. Exposed so tests and views can say which elements a sample holds."""
    shape = tuple(int(s) for s in shape)
    if sum(s > 1 for s in shape) == 1:
        shape = (max(shape),)  # one long axis: a single row, what a sparkline draws
    if len(shape) == 0:
        rows, cols = 1, 1
    elif len(shape) == 1:
        rows, cols = 1, shape[0]
    else:
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
    return _pick(rows), _pick(cols), (rows, cols)


def json_number(x):
    """A JSON-safe number: NaN and +-Inf become the strings JavaScript's String(x) gives."""
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


def value_preview(value: Any, place: str | None = None) -> ValuePreview | None:
    """The ValuePreview of a tensor (NumPy or CuPy array, or a Python/NumPy scalar); None for anything
    else (step scopes, lists, no value)."""
    if value is None or isinstance(value, (list, tuple, dict, str, bytes)):
        return None
    if not _is_tensor(value):
        if not isinstance(value, (bool, int, float, complex, np.generic)):
            return None
        value = np.asarray(value)
    xp = _xp(value)
    a = value
    if place is None:
        from kernelcore.runtime.place import place_of
        place = str(place_of(value))
    shape = [int(s) for s in a.shape]
    kind: PreviewKind = ("scalar" if a.size == 1 else "sparkline" if sum(s > 1 for s in shape) == 1 else "heatmap")
    out: ValuePreview = {"shape": shape, "dtype": str(a.dtype), "place": place, "min": None, "max": None,
                         "mean": None, "std": None, "nan": 0, "inf": 0, "sample": [], "kind": kind}
    dk = a.dtype.kind
    if dk not in "biufc":
        return out
    num = a.astype(xp.float64) if dk in "bui" else (xp.abs(a) if dk == "c" else a)
    if dk in "fc":
        finite = xp.isfinite(num)
        nan, n_finite = int(xp.isnan(num).sum()), int(finite.sum())
        out["nan"], out["inf"] = nan, int(num.size - n_finite - nan)
        if n_finite != num.size:
            num = num[finite]
    if num.size:
        num64 = num.astype(xp.float64)
        out["min"], out["max"] = float(num64.min()), float(num64.max())
        out["mean"], out["std"] = float(num64.mean()), float(num64.std())
    rows, cols, two_d = sample_indices(shape)
    if a.size:
        flat = a.reshape(two_d)
        sample = _host(flat[xp.asarray(rows)][:, xp.asarray(cols)])  # only these values leave the GPU
        if dk == "c":
            sample = np.abs(sample)
        out["sample"] = [[json_number(x) for x in row] for row in sample.tolist()]
    return out


def scope_json(node, *, previews: dict | None = None, roles: dict | None = None) -> ScopeJSON:
    """ScopeJSON of a kernelcore.observe.scope_forest.ScopeNode: its to_json() with a preview and the roles of
    each variable. `previews` maps names to ValuePreviews (absent: computed from the node's values);
    `roles` maps names to lists of roles."""
    d = node.to_json()
    roles = roles or {}
    for v in d["vars"]:
        name = v["name"]
        if previews is not None and name in previews:
            v["preview"] = previews[name]
        else:
            v["preview"] = value_preview(node.value(name)) if v["kind"] == "tensor" else None
        rs = list(roles.get(name, ()))
        v["roles"] = rs
        v["role"] = rs[0] if rs else None
    return d
