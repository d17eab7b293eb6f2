"""The tensor viewer's edits at a pause: the new value of "Zero", "Edit cell" and "Replace with <a notebook
variable>", each checked against the value it replaces before the session is asked to set it (sess.set_value
forks the run: kernelcore/observe/forks.py), and "Copy value" as a bounded NumPy literal.

Nothing here writes: each function returns the array the person asked for, or raises a RequestError saying
why it does not fit (a shape, a dtype, a name that is not defined, an index outside the tensor).
"""
from __future__ import annotations

import math

import numpy as np

from kernelcore.runtime.place import to_host

from .requests import RequestError, brief

MAX_LITERAL = 20_000  # characters of a copied NumPy literal; a bigger value is refused, not cut
SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}


def host_copy(value) -> np.ndarray:
    return np.array(to_host(value))


def zeroed(value) -> np.ndarray:
    return np.zeros_like(host_copy(value))


def cell_number(raw, dtype) -> float | int:
    """A cell's new value as typed: a number, or "nan" / "inf" / "-inf" for a float tensor."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise RequestError(f"a cell's value is a number, got {brief(raw)}")
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in SPECIAL:
            x = SPECIAL[text]
        else:
            x = _parse_number(text, raw)
    else:
        x = raw
    kind = np.dtype(dtype).kind
    if kind in "biu":
        if not (isinstance(x, int) or (isinstance(x, float) and math.isfinite(x) and x.is_integer())):
            raise RequestError(f"the tensor holds {dtype}: {brief(raw)} is no integer")
        info = np.iinfo(dtype) if kind != "b" else None
        if info is not None and not info.min <= int(x) <= info.max:
            raise RequestError(f"{brief(raw)} does not fit in {dtype} ({info.min} .. {info.max})")
        return int(x)
    return float(x)


def user_namespace(namespace: dict | None = None) -> dict:
    """`namespace`, or the IPython kernel's user namespace when None."""
    if namespace is not None:
        return namespace
    from IPython import get_ipython
    ip = get_ipython()
    if ip is None:
        raise RuntimeError("the notebook's namespace (send to notebook, replace with) needs an IPython kernel")
    return ip.user_ns


def _parse_number(text: str, raw) -> float | int:
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise RequestError(f"{brief(raw)} is not a number") from None


def with_cell(value, index, raw) -> np.ndarray:
    """A host copy of `value` with the cell at `index` (one integer per axis) set to `raw`."""
    shape = tuple(int(d) for d in value.shape)
    if not isinstance(index, (list, tuple)) or len(index) != len(shape) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < d for i, d in zip(index, shape)):
        raise RequestError(f"index {brief(index)} is not a cell of shape {list(shape)}")
    out = host_copy(value)
    out[tuple(index)] = cell_number(raw, out.dtype)
    return out


def from_namespace(source, namespace: dict, like) -> np.ndarray:
    """The notebook variable `source` as the replacement of `like`: a numeric array of the same shape whose
    dtype casts safely to `like`'s kind (an integer into a float tensor, not a float into an integer one)."""
    if not isinstance(source, str) or not source.isidentifier():
        raise RequestError(f"replace with a notebook variable's name, got {brief(source)}")
    if source not in namespace:
        raise RequestError(f"{source!r} is not defined in the notebook")
    obj = namespace[source]
    try:
        arr = np.asarray(to_host(obj) if hasattr(obj, "__cuda_array_interface__") else obj)
    except Exception as e:  # an object NumPy cannot read as an array
        raise RequestError(f"{source!r} is not an array ({type(obj).__name__}): {e}") from None
    want = np.dtype(like.dtype)
    if arr.dtype.kind not in "biuf":
        raise RequestError(f"{source!r} holds {arr.dtype}, not numbers")
    if tuple(arr.shape) != tuple(int(d) for d in like.shape):
        raise RequestError(f"{source!r} has shape {list(arr.shape)}; the tensor has {[int(d) for d in like.shape]}")
    if not np.can_cast(arr.dtype, want, casting="same_kind"):
        raise RequestError(f"{source!r} holds {arr.dtype}, which does not cast to the tensor's {want} "
                           "without losing its kind (convert it first)")
    return arr.astype(want, copy=True)


def numpy_literal(value, max_chars: int = MAX_LITERAL) -> str:
    """`np.array([...], dtype=...)` of the whole value (NaN and Inf as np.nan / np.inf), or a RequestError when
    that would be longer than `max_chars` (a literal cut short would be a different value)."""
    a = host_copy(value)
    if a.size * 2 > max_chars:
        raise RequestError(f"the value has {a.size} elements: too many to copy as a literal (send it to the "
                           "notebook instead)")
    with np.printoptions(threshold=max_chars, linewidth=120, floatmode="unique", nanstr="nan", infstr="inf"):
        body = np.array2string(a, separator=", ")
    body = body.replace("nan", "np.nan").replace("inf", "np.inf")
    text = f"np.array({body}, dtype=np.{a.dtype.name})"
    if len(text) > max_chars:
        raise RequestError(f"the value's literal is {len(text)} characters, more than {max_chars}: send it to the "
                           "notebook instead")
    return text


EDIT_KINDS = ("zero", "cell", "replace")


def edited(value, edit: str, index=None, cell=None, source=None, namespace: dict | None = None) -> np.ndarray:
    """The new value an edit asks for: zeros, `value` with one cell set, or the notebook variable `source`."""
    if edit == "zero":
        return zeroed(value)
    if edit == "cell":
        return with_cell(value, index, cell)
    if edit == "replace":
        return from_namespace(source, user_namespace(namespace), value)
    raise RequestError(f"an edit is one of {list(EDIT_KINDS)}, got {brief(edit)}")


def tensor_set(sess, namespace, name: str, edit: str, index=None, value=None, source=None, **_) -> dict:
    """The sidebar's tensor panel's edit (the `tensor_set` command): `name` as the session sees it where it
    waits, zeroed, with one cell set or replaced, through sess.set_value (the run forks; the trace records
    it). A TensorSet: the variable, the edit, the trace event recording it, whether an unedited twin exists."""
    if not sess.at_present or sess.finished:
        raise RequestError("an edit is made where a running session waits: move to the present of a run that "
                           "has not finished")
    old = sess.value(name)
    if not (hasattr(old, "shape") and hasattr(old, "dtype")) or np.dtype(old.dtype).kind not in "biuf":
        raise RequestError(f"{name!r} is no numeric tensor here: nothing to edit")
    fork = sess.set_value(name, edited(old, edit, index, value, source, namespace))
    return {"set": name, "edit": edit, "event": fork.event, "forked": fork.twin is not None}
