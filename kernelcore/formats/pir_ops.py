"""Paddle 3's PIR ops as kernelcore ops: one table, one row per `pd_op.*` op kernelcore runs, gathered from the
family tables (pir_ops_math, pir_ops_tensor, pir_ops_nn); what a row says: pir_op_spec.py.
"""
from __future__ import annotations

from .pir_op_spec import DROP, PirOp
from .pir_ops_math import MATH_OPS
from .pir_ops_nn import NN_OPS
from .pir_ops_tensor import TENSOR_OPS

__all__ = ["CONSTANT_MAKERS", "DROP", "PIR_OPS", "PirOp"]

PIR_OPS: dict[str, PirOp] = {**MATH_OPS, **TENSOR_OPS, **NN_OPS}
assert len(PIR_OPS) == len(MATH_OPS) + len(TENSOR_OPS) + len(NN_OPS), "a pd_op with rows in two families"

# Ops that make the constants other ops fold into attributes; run as kernelcore ops where a value is used as a
# tensor (an operand of `add`, say).
CONSTANT_MAKERS = frozenset({"pd_op.full", "pd_op.full_int_array"})
