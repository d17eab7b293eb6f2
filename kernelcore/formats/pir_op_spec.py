"""The rows of the PIR op table (pir_ops.py): what a row says, and the builders the family tables use.

A PIR op passes its operands by position and keeps some of what a legacy op held as attributes in operands
(a pool's `kernel_size`, a reshape's `shape`, a reduction's `axis`, a scale's `scale`, made by `pd_op.full` or
`pd_op.full_int_array`). A row names, in Paddle's operand order, where each operand goes:

    "X"           the legacy input slot it feeds
    "@ksize"      the legacy attribute its value becomes; the operand must be a constant
    "@shape|Shape|ShapeTensor"
                  that attribute when the operand is a constant; otherwise the legacy slot for a tensor (Shape)
                  or, when the operand is a list of values (`builtin.combine`), the slot for a list (ShapeTensor)
    None          dropped (an optional operand kernelcore's op does not take; it must be absent)
    "~"           ignored whether present or not (state Paddle threads through that the op does not read)

Results are named the same way, with `=mean` for an in-place result that aliases operand `mean` (a batch
norm's running mean, as Paddle's legacy programs write it). Each row also keeps Paddle's own operand and
attribute names: tests/test_pir_reader.py and tests/test_pir_op_table_sweep.py check them against what Paddle's
runtime reports for each op in the programs Paddle wrote (make_pir_models.py's zoo, the API sweep's PIR programs:
tests/paddle_oracle/pir_signatures.py), so a renamed or reordered operand in a later Paddle release is caught
rather than run wrongly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class PirOp:
    legacy: str                                  # kernelcore's op type
    inputs: tuple[tuple[str, str | None], ...]   # (Paddle's operand name, where it goes)
    outputs: tuple[tuple[str, str | None], ...]  # (Paddle's result name, legacy output slot[=aliased operand])
    attrs: dict[str, str] = field(default_factory=dict)  # Paddle's attribute -> legacy attribute ("" drops)
    fixed: dict = field(default_factory=dict)    # legacy attributes with one value for every such op
    adjust: Callable[[dict], None] | None = None  # last touches on the legacy attributes
    input_dtype_attr: str = ""                   # a legacy attribute that states the first operand's dtype
    operands_take_dtype: bool = False            # Paddle's `dtype` attribute is the constant operands' dtype
    cast_result: tuple[str, str] | None = None   # (the legacy op's result dtype, Paddle's): a cast follows it
    # legacy output slots PIR gives no result for, named by the reader as Paddle's legacy programs name them:
    # reshape2's XShape (X's shape, which the gradient reads), so a PIR program differentiates as a legacy one
    extra_outputs: tuple[str, ...] = ()

    @property
    def pir_inputs(self) -> list[str]:
        return [n for n, _ in self.inputs]


X, OUT = (("x", "X"),), (("out", "Out"),)
DROP = ""  # an attribute with no legacy counterpart that changes nothing here (struct_name, place)


def unary(legacy: str, **attrs) -> PirOp:
    return PirOp(legacy, X, OUT, dict(attrs))


def binary(legacy: str) -> PirOp:
    return PirOp(legacy, (("x", "X"), ("y", "Y")), OUT, fixed={"axis": -1})


def binary_no_axis(legacy: str) -> PirOp:
    """A two-operand op (x, y) whose legacy form has no broadcast `axis` (bitwise and logical ops, bmm, kron)."""
    return PirOp(legacy, (("x", "X"), ("y", "Y")), OUT)


def reduce_all_when_no_axis(attrs: dict) -> None:
    # an empty axis list reduces every axis (Paddle's reduce ops say so with reduce_all)
    dims = attrs.get("dim")
    if dims is None or list(dims) == []:
        attrs["dim"] = []
        attrs["reduce_all"] = True


def reduce(legacy: str) -> PirOp:
    return PirOp(legacy, (("x", "X"), ("axis", "@dim")), OUT, {"keepdim": "keep_dim", "dtype": DROP},
                 adjust=reduce_all_when_no_axis)


def conv(legacy: str) -> PirOp:
    return PirOp(legacy, (("input", "Input"), ("filter", "Filter")), (("out", "Output"),),
                 {"strides": "strides", "paddings": "paddings", "padding_algorithm": "padding_algorithm",
                  "dilations": "dilations", "groups": "groups", "data_format": "data_format"})


def interp(legacy: str) -> PirOp:
    return PirOp(legacy, (("x", "X"), ("out_size", "OutSize"), ("size_tensor", "SizeTensor"),
                          ("scale_tensor", "Scale")), (("output", "Out"),),
                 {"data_format": "data_layout", "out_d": "out_d", "out_h": "out_h", "out_w": "out_w",
                  "scale": "scale", "interp_method": "interp_method", "align_corners": "align_corners",
                  "align_mode": "align_mode"})


def dropout_mode(attrs: dict) -> None:
    attrs["dropout_implementation"] = attrs.pop("mode", "downgrade_in_infer")


def same(*names: str) -> dict[str, str]:
    """Attributes PIR names as the legacy op does."""
    return {n: n for n in names}


def pool_ksize_as_ints(attrs: dict) -> None:
    attrs["ksize"] = [int(k) for k in attrs.get("ksize", [])]


def reduce_attr_axis(legacy: str) -> PirOp:
    """A reduction whose axes PIR keeps as an attribute (all, any), not as an operand."""
    return PirOp(legacy, X, OUT, {"axis": "dim", "keepdim": "keep_dim"}, adjust=reduce_all_when_no_axis)


# assign_value's legacy attribute for its values, by the VarType number of its dtype (BOOL 0, INT32 2, INT64 3,
# FP32 5, FP64 6)
_VALUES_ATTR = {0: "bool_values", 2: "int32_values", 3: "int64_values", 5: "fp32_values", 6: "fp64_values"}


def values_by_dtype(attrs: dict) -> None:
    values = attrs.pop("values", [])
    slot = _VALUES_ATTR.get(attrs.get("dtype"))
    if slot is None:
        raise ValueError(f"assign_value_ of dtype {attrs.get('dtype')} (kernelcore's takes bool, int32, int64, "
                         "float32 and float64)")
    attrs[slot] = values


def pool_with_index(legacy: str) -> PirOp:
    return PirOp(legacy, X, (("out", "Out"), ("mask", "Mask")),
                 {"kernel_size": "ksize", "strides": "strides", "paddings": "paddings",
                  "global_pooling": "global_pooling", "adaptive": "adaptive", "ceil_mode": "ceil_mode"})


def tril(lower: bool) -> PirOp:
    return PirOp("tril_triu", X, OUT, {"diagonal": "diagonal"}, fixed={"lower": lower})


def xshape(spec: PirOp) -> PirOp:
    return PirOp(spec.legacy, spec.inputs, spec.outputs, spec.attrs, spec.fixed, spec.adjust,
                 extra_outputs=("XShape",))
