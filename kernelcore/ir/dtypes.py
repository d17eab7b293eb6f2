"""The mapping between the wire format's VarType.Type and NumPy dtypes."""
from __future__ import annotations

import numpy as np

from ..errors import DtypeError
from .proto import framework_pb2 as pb

VT = pb.VarType

_TO_NUMPY = {
    VT.BOOL: np.bool_, VT.INT8: np.int8, VT.UINT8: np.uint8, VT.INT16: np.int16,
    VT.INT32: np.int32, VT.INT64: np.int64, VT.FP16: np.float16, VT.FP32: np.float32,
    VT.FP64: np.float64, VT.COMPLEX64: np.complex64, VT.COMPLEX128: np.complex128,
    VT.UINT16: np.uint16, VT.UINT32: np.uint32, VT.UINT64: np.uint64,
}
_FROM_NUMPY = {np.dtype(v): k for k, v in _TO_NUMPY.items()}

# Short names for the text form and for users who would rather write "float32".
_NAMES = {
    VT.BOOL: "bool", VT.INT8: "int8", VT.UINT8: "uint8", VT.INT16: "int16", VT.INT32: "int32",
    VT.INT64: "int64", VT.FP16: "float16", VT.FP32: "float32", VT.FP64: "float64",
    VT.BF16: "bfloat16", VT.COMPLEX64: "complex64", VT.COMPLEX128: "complex128",
    VT.UINT16: "uint16", VT.UINT32: "uint32", VT.UINT64: "uint64",
}


# Types a program may declare that no NumPy dtype holds: bfloat16 and float8 need the `ml_dtypes` package,
# which kernelcore does not depend on (yet); strings and RAW are no tensors at all.
_NO_NUMPY_WHY = {
    VT.BF16: "bfloat16 has no NumPy dtype (kernelcore does not use ml_dtypes); declare float32 or float16",
    VT.FP8_E4M3FN: "float8 has no NumPy dtype (kernelcore does not use ml_dtypes)",
    VT.FP8_E5M2: "float8 has no NumPy dtype (kernelcore does not use ml_dtypes)",
}


def to_numpy(data_type: int) -> np.dtype:
    """The NumPy dtype of a VarType data type; DtypeError (a TypeError) for one without any."""
    try:
        return np.dtype(_TO_NUMPY[data_type])
    except (KeyError, TypeError):
        why = _NO_NUMPY_WHY.get(data_type, "it is no tensor element type NumPy can hold")
        raise DtypeError(f"data type {type_name(data_type)} has no NumPy equivalent: {why}") from None


def from_numpy(dtype) -> int:
    dt = np.dtype(dtype)
    try:
        return _FROM_NUMPY[dt]
    except KeyError:
        raise DtypeError(f"NumPy dtype {dt} has no program data type") from None


def type_name(data_type: int) -> str:
    """'float32' for FP32; the enum name for the rest (e.g. 'LOD_TENSOR')."""
    if data_type in _NAMES:
        return _NAMES[data_type]
    try:
        return VT.Type.Name(data_type)
    except ValueError:
        return f"<type {data_type}>"


def parse_dtype(dtype) -> int:
    """Accept a VarType.Type value, a NumPy dtype or a name ('float32', 'FP32')."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return dtype
    if isinstance(dtype, str):
        for k, v in _NAMES.items():
            if v == dtype:
                return k
        if dtype in VT.Type.keys():
            return VT.Type.Value(dtype)
    return from_numpy(dtype)


FLOATS = frozenset({VT.FP16, VT.FP32, VT.FP64, VT.BF16})


# The variable types that hold tensors (a program's data, as opposed to feed/fetch lists, step scopes, readers)
TENSOR_TYPES = frozenset({pb.VarType.LOD_TENSOR, pb.VarType.SELECTED_ROWS, pb.VarType.LOD_TENSOR_ARRAY})


def tensor_desc(var_desc: pb.VarDesc):
    """The TensorDesc (dims, data type) a VarDesc declares, or None for a type that holds no tensor or one
    declared without it."""
    t = var_desc.type
    if t.type == pb.VarType.LOD_TENSOR:
        return t.lod_tensor.tensor if t.HasField("lod_tensor") else None
    if t.type == pb.VarType.LOD_TENSOR_ARRAY:
        return t.tensor_array.tensor if t.HasField("tensor_array") else None
    if t.type == pb.VarType.SELECTED_ROWS:
        return t.selected_rows if t.HasField("selected_rows") else None
    return None
