"""A graph overlay: per-node numbers (a time, a comparison metric, a health statistic, the user's own) turned
into the `overlay` trait the ProgramGraph view colours its nodes by.

    graph.overlay({"o0:3": 0.2, "o0:7": float("nan")}, label="max abs err")      # ops, by op id
    graph.overlay({"fc_0.w_0": 3.0}, on="vars", scale=[1, 10], label="grad norm")  # vars, by name; thresholds
    graph.overlay(cmp.numbers("max_abs"), scale="log")                              # a run comparison
    graph.clear_overlay()

The trait (the front end's labextension/src/overlay.ts reads it):
    {"on": "ops"|"vars", "label": str, "scale": "gradient"|"log"|[t1, t2, ...], "colors": [css hex, ...],
     "aggregate": "max"|"min"|"mean", "values": {node id: number | "NaN" | "Infinity" | "-Infinity"},
     "min": number|None, "max": number|None,        (min/max over the finite values)
     "groups": {group id: {"value": number|str, "count": int}}}   (group_values: the groups' aggregates)
JSON has no NaN or Infinity, so non-finite values travel as those strings; the view gives them colours of their
own (a NaN is what a health overlay is looking for).
"""
from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Mapping

from kernelcore.errors import KernelcoreError, UnknownNameError
from kernelcore.ir.node_ids import op_id, parse_node_id, var_id

SCALES = ("gradient", "log")
AGGREGATES = ("max", "min", "mean")
MAX_THRESHOLDS = 16
_HEX = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_CLOSE_SHOWN = 5


def overlay_state(program, values: Mapping, *, on: str = "ops", scale="gradient", colors=None,
                  label: str = "value", aggregate: str = "max") -> dict:
    """The `overlay` trait for `values` ({op id or op index of block 0: number} with on="ops",
    {var name or var id: number} with on="vars") over `program` (a kc.Program)."""
    if on not in ("ops", "vars"):
        raise KernelcoreError(f"overlay(on=...) is 'ops' or 'vars', got {on!r}")
    if aggregate not in AGGREGATES:
        raise KernelcoreError(f"overlay(aggregate=...) is one of {list(AGGREGATES)}, got {aggregate!r}")
    if not isinstance(values, Mapping):
        raise KernelcoreError(f"overlay takes a mapping {{node: number}}, got {type(values).__name__}")
    scale_json = _scale(scale)
    colors_json = _colors(colors, scale_json)
    resolve = _op_keys(program) if on == "ops" else _var_keys(program)
    out: dict = {}
    unknown: list = []
    for key, value in values.items():
        node = resolve(key)
        if node is None:
            unknown.append(key)
            continue
        out[node] = _number(key, value)
    if unknown:
        raise _unknown(program, on, unknown)
    finite = [v for v in out.values() if not isinstance(v, str)]
    return {"on": on, "label": str(label), "scale": scale_json, "colors": colors_json, "aggregate": aggregate,
            "values": out, "min": min(finite) if finite else None, "max": max(finite) if finite else None}


def group_values(spec: dict, program_json: dict, parts=None) -> dict:
    """{group id: {"value": the spec's aggregate over the group's members with a value, at any depth,
    "count": how many}} for the program's layer/stage/repeat groups (ProgramJSON `groups`). The view
    aggregates what it has drawn itself; these cover a big program's groups whose members it never fetched."""
    chains = _GroupChains(program_json, parts)
    members: dict = {}
    for node, value in spec["values"].items():
        for gid in chains.around(node):
            members.setdefault(gid, []).append(float(value))
    return {gid: {"value": _number(gid, aggregate(xs, spec["aggregate"])), "count": len(xs)}
            for gid, xs in members.items()}


def aggregate(xs: list, how: str) -> float:
    """max / min / mean of `xs`; NaN when any is NaN (a group holding a NaN must show it), as the view does."""
    if not xs or any(math.isnan(x) for x in xs):
        return math.nan
    if how == "max":
        return max(xs)
    if how == "min":
        return min(xs)
    return math.fsum(xs) / len(xs)


class _GroupChains:
    """The groups around an op or a variable, innermost first: from the program's parts when it was sent in
    parts (ProgramJSON 3), else from the ProgramJSON's `group` fields."""

    def __init__(self, program_json: dict, parts=None):
        self._parts = parts
        self._op_group: dict = {}
        self._var_group: dict = {}
        self._parent: dict = {}
        if parts is None:
            for blk in program_json.get("blocks", ()):
                b = blk["idx"]
                self._parent.update({g["id"]: g.get("parent") for g in blk.get("groups") or ()})
                self._op_group.update({(b, o["idx"]): o.get("group") for o in blk.get("ops", ())})
                self._var_group.update({(b, v["name"]): v.get("group") for v in blk.get("vars", ())})

    def _first(self, node: str):
        kind, b, at = parse_node_id(node)
        if self._parts is None:
            return b, (self._op_group if kind == "op" else self._var_group).get((b, at))
        blk = self._parts.blocks[b]
        return b, (blk.inner[at] if kind == "op" else blk.vgroup.get(at))

    def around(self, node: str) -> list:
        b, gid = self._first(node)
        parent = self._parent if self._parts is None else self._parts.blocks[b].parent
        out = []
        while gid is not None and gid not in out:
            out.append(gid)
            gid = parent.get(gid)
        return out


def _scale(scale):
    if isinstance(scale, str):
        if scale not in SCALES:
            raise KernelcoreError(f"overlay(scale=...) is one of {list(SCALES)} or a list of thresholds, got {scale!r}")
        return scale
    try:
        cuts = [float(x) for x in scale]
    except (TypeError, ValueError):
        raise KernelcoreError(f"overlay(scale=...) is one of {list(SCALES)} or a list of numbers (thresholds), "
                              f"got {scale!r}") from None
    if not 1 <= len(cuts) <= MAX_THRESHOLDS or not all(math.isfinite(c) for c in cuts):
        raise KernelcoreError(f"overlay thresholds are 1 to {MAX_THRESHOLDS} finite numbers, got {list(scale)!r}")
    if any(b <= a for a, b in zip(cuts, cuts[1:])):
        raise KernelcoreError(f"overlay thresholds must increase, got {cuts}")
    return cuts


def _colors(colors, scale_json) -> list:
    """The colours as given (checked), or [] for the view's own palette. Thresholds t1 < ... < tn cut the
    line into n+1 bands: one colour each."""
    if colors is None:
        return []
    if isinstance(colors, str) or not all(isinstance(c, str) and _HEX.match(c) for c in colors):
        raise KernelcoreError(f"overlay(colors=...) is a list of '#rgb' or '#rrggbb' colours, got {colors!r}")
    colors = list(colors)
    if isinstance(scale_json, list) and len(colors) != len(scale_json) + 1:
        raise KernelcoreError(f"{len(scale_json)} thresholds make {len(scale_json) + 1} bands: give that many "
                              f"colours, got {len(colors)}")
    if isinstance(scale_json, str) and len(colors) < 2:
        raise KernelcoreError(f"a gradient runs between at least 2 colours, got {len(colors)}")
    return colors


def _number(key, value):
    if type(value) is float:  # the common case, without the ABC check
        x = value
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise KernelcoreError(f"overlay value of {key!r} is not a number: {type(value).__name__} {value!r:.60}")
    else:
        x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def _op_keys(program):
    """key -> the op id of `program` it names (an op id "o<block>:<index>" or an int: an op index of block
    0), or None."""
    counts = [len(b.ops) for b in program.desc.blocks]

    def resolve(key) -> str | None:
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            b, i = 0, int(key)
        else:
            parsed = parse_node_id(key)
            if parsed is None or parsed[0] != "op":
                return None
            b, i = parsed[1], parsed[2]
        return op_id(b, i) if 0 <= b < len(counts) and 0 <= i < counts[b] else None
    return resolve


def _var_keys(program):
    """key -> the var id of `program` it names (a var id "v<block>:<name>", or a name: the block declaring
    it that comes first), or None."""
    declared = [{v.name for v in b.vars} for b in program.desc.blocks]
    first: dict = {}
    for b, names in enumerate(declared):
        for name in names:
            first.setdefault(name, b)

    def resolve(key) -> str | None:
        if not isinstance(key, str):
            return None
        parsed = parse_node_id(key)
        if parsed is not None and parsed[0] == "var":
            b, name = parsed[1], parsed[2]
            return key if 0 <= b < len(declared) and name in declared[b] else None
        return var_id(first[key], key) if key in first else None
    return resolve


def _unknown(program, on: str, keys: list) -> KernelcoreError:
    """An error naming the first key the program lacks, with the nearest names it has (and how many more)."""
    first = keys[0]
    more = f" ({len(keys) - 1} more keys unknown)" if len(keys) > 1 else ""
    if on == "ops":
        what = "op"
        known = [op_id(b.idx, i) for b in program.blocks for i in range(len(b.ops))]
        if isinstance(first, str) and _var_keys(program)(first) is not None:
            return KernelcoreError(f"{first!r} is a variable, not an op id (o<block>:<index>): "
                                   f"use overlay(..., on='vars'){more}")
    else:
        what = "variable"
        known = sorted({v.name for b in program.blocks for v in b.vars})
        if _op_keys(program)(first) is not None:
            return KernelcoreError(f"{first!r} is an op, not a variable: use overlay(..., on='ops'){more}")
    close = difflib.get_close_matches(str(first), known, n=_CLOSE_SHOWN)
    err = UnknownNameError(what, str(first), close)
    err.args = (str(err) + more,)
    return err
