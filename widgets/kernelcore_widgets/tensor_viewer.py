"""TensorViewer: one tensor, looked at closely.

A 2-D slice of the value (two axes chosen to show, a slider for each other axis), drawn as a heatmap with NaN
and +-Inf marked; tfdbg2's value classes (negative / zero / positive / NaN / +Inf / -Inf counts); the
difference from the same variable's previous value (its previous write: the previous timestep for a step
variable, the previous run for a parameter); and "send to notebook", which binds the value (or the slice)
to a name in the kernel's namespace.

    TensorViewer(array, name="h")                      # any NumPy/CuPy array
    TensorViewer(array, previous=older)                # with a diff against `older`
    TensorViewer.of(session, "h")                      # a debug session's variable, diffed against its last write

A viewer made with `of` follows the session: after every move it shows the value at the new cursor (or says
the variable is not visible there), never the old value under the new position. At a pause in the present it
also edits: "Zero", "Edit cell" and "Replace with" a notebook variable (tensor_edit.py checks each) go to
sess.set_value, which forks the run and records the edit in the trace; nothing is written unless the person
pressed the button that says so. "Copy value" gives the value as a NumPy literal (bounded).

Values stay where they live: only the shown slice (at most 256 x 256, strided) and the counts are copied to
the host, and only when asked.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import traitlets as t

import kernelcore as kc
from kernelcore.runtime.place import place_of, to_host
from kernelcore.runtime.values import health, slice_2d

from . import tensor_edit
from .tensor_edit import user_namespace
from ._base import STATIC, KCWidget
from .requests import NameTaken, RequestError, bool_arg, brief, choice_arg, claim_name, error_text, str_arg
from .schema import json_number

MAX_SIDE = 256  # a slice side past this is strided so the browser gets at most 256 x 256 values


def _host_rows(s) -> list:
    a = np.asarray(to_host(s))
    if a.dtype.kind == "c":
        a = np.abs(a)
    return [[json_number(x) for x in row] for row in a.tolist()]


def draw(v, axes, index, diff: bool = False) -> dict:
    """What the view shows of array `v` (the value, or value - previous when `diff`): the slice on `axes` at
    `index` (at most MAX_SIDE x MAX_SIDE, strided), the value classes and a status line. Shared by the widget
    and the sidebar's tensor panel (comm.py)."""
    xp = place_of(v).xp
    r, c = (int(a) for a in axes)
    s, (rs, cs) = slice_2d(xp, v, r, c, index, MAX_SIDE)
    data = _host_rows(s)
    flat = [x for row in data for x in row if isinstance(x, (int, float)) and not isinstance(x, bool)]
    what = "value - previous" if diff else "value"
    return {"slice": {"rows": len(data), "cols": len(data[0]) if data else 0, "row_step": rs, "col_step": cs,
                      "data": data, "min": min(flat) if flat else None, "max": max(flat) if flat else None},
            "health": health(xp, v),
            "status": (f"{what}: axes {r} x {c}" + (f", every {rs}th row / {cs}th column" if rs > 1 or cs > 1 else "")
                       if v.ndim >= 2 else what)}


def check_view(shape, axes=None, index=None) -> tuple[list, list]:
    """(axes, index) for a tensor of `shape`: the given ones checked (ValueError naming what does not fit:
    anything but integers, the wrong count, out of range), else the defaults (the last two axes, index 0
    everywhere)."""
    nd = len(shape)
    if axes is None:
        axes = [max(nd - 2, 0), max(nd - 1, 0)]
    if not _ints(axes) or len(axes) != 2:
        raise RequestError(f"axes must be two integers, got {brief(axes)}")
    r, c = axes
    if nd >= 2 and (not (0 <= r < nd and 0 <= c < nd) or r == c):
        raise RequestError(f"axes {list(axes)}: two different axes of a {nd}-d tensor")
    if index is None:
        index = [0] * nd
    if not _ints(index) or len(index) != nd or any(not 0 <= i < d for i, d in zip(index, shape)):
        raise RequestError(f"index {brief(index)} does not fit shape {list(shape)}")
    return [r, c], list(index)


def _ints(v) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)


def diff_base(session, name: str, value):
    """The value `name` held before `value` in a session's run (its previous write), or None."""
    latest, older = previous_write(session, name)
    return older if latest is not None and _same(latest, value) else latest


def send_value(value, name: str, namespace: dict | None = None, slice_of: tuple | None = None,
               overwrite: bool = False) -> tuple[Any, bool]:
    """Bind a host copy of `value` (or, with slice_of=(axes, index), of its full-size 2-D slice there) to
    `name` in `namespace` (the IPython kernel's user namespace by default). Returns (the bound object,
    whether it replaced something).

    Only a name code can use is bound (requests.check_new_name). A name that already means something (a
    user's variable, a builtin) is replaced only with `overwrite`, which the front end sends after the person
    confirmed; else NameTaken proposes a free name beside it."""
    ns = user_namespace(namespace)
    replaced = claim_name(name, ns, overwrite)
    if slice_of is not None:
        xp = place_of(value).xp
        (r, c), index = slice_of
        s, _ = slice_2d(xp, value, r, c, index, max([int(d) for d in value.shape] or [1]))
        obj = np.asarray(to_host(s))
    else:
        obj = np.array(to_host(value))
    ns[name] = obj
    return obj, replaced


def previous_write(session, name: str):
    """The two latest values a session's run wrote to `name` up to its cursor (newest first; None where
    missing), from the trace's op records (the session keeps value references)."""
    events = session.trace.events
    upto = session.pauses[session.pause_index].index if session.pauses else len(events) - 1
    found = []
    for e in reversed(events[:upto + 1]):
        if e.kind != "op_run" or not e.values:
            continue
        for n, v in e.values:
            if n == name:
                found.append(v)
                break
        if len(found) == 2:
            break
    found += [None] * (2 - len(found))
    return found[0], found[1]


class TensorViewer(KCWidget):
    """See the module docstring. Messages: `{"type": "view", "axes": [r, c], "index": [...], "diff": bool}`
    and `{"type": "send", "name": str, "what": "value" | "slice", "overwrite": bool}` (overwrite: the person
    confirmed replacing a defined name). A failed message says why in `status` and an error message."""

    _esm = STATIC / "TensorViewer.js"
    _css = STATIC / "TensorViewer.css"

    name = t.Unicode("").tag(sync=True)
    shape = t.List().tag(sync=True, ts="number[]")
    dtype = t.Unicode("").tag(sync=True)
    place = t.Unicode("").tag(sync=True)
    axes = t.List([0, 1]).tag(sync=True, ts="number[]")  # [rows axis, cols axis]
    index = t.List().tag(sync=True, ts="number[]")  # one entry per axis; the shown axes' entries are ignored
    diff = t.Bool(False).tag(sync=True)          # show value - previous
    has_previous = t.Bool(False).tag(sync=True)
    slice = t.Dict().tag(sync=True, ts="TensorSlice | Record<string, never>")
    # kernelcore.runtime.values.health of the value (or of the diff)
    health = t.Dict().tag(sync=True, ts="TensorHealth | Record<string, never>")
    status = t.Unicode("").tag(sync=True)
    # the last send's name was taken: {"taken", "proposed", "what"} (the view offers the proposed name and an
    # Overwrite button); {} otherwise
    name_taken = t.Dict().tag(sync=True, ts="SentNameTaken | Record<string, never>")
    # the session's cursor the value is from ("" for a plain array); the header shows it with the value
    position = t.Unicode("").tag(sync=True)
    # a session paused in the present: the value can be edited there (Zero, Edit cell, Replace with)
    editable = t.Bool(False).tag(sync=True)
    edits = t.Int(0).tag(sync=True)  # edits made from this viewer (each forked the run)

    def __init__(self, value, name: str = "", previous=None, *, namespace: dict | None = None, session=None,
                 **kw):
        super().__init__(**kw)
        self._session = session
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            value = np.asarray(value)
        if value.dtype.kind not in "biufc":
            raise TypeError(f"TensorViewer shows numeric tensors; {name or 'the value'} is {value.dtype}")
        self._value = value
        self._previous = previous if previous is not None and getattr(previous, "shape", None) == value.shape \
            else None
        self._namespace = namespace
        self.name = name
        self._show_value(value)
        if previous is not None and self._previous is None:
            self.status = f"the previous value has shape {list(previous.shape)}: no diff"
        if session is not None:
            self._follow_session(session)

    def _show_value(self, value) -> None:
        """Take `value` as the one shown (axes and index kept where they still fit its shape)."""
        self._value = value
        shape = [int(d) for d in value.shape]
        keep = shape == list(self.shape) and len(self.index) == len(shape)
        self.shape = shape
        self.dtype = str(value.dtype)
        self.place = str(place_of(value))
        self.has_previous = self._previous is not None
        if not keep:
            nd = value.ndim
            self.index = [0] * nd
            self.axes = [max(nd - 2, 0), max(nd - 1, 0)]
        self.diff = self.diff and self._previous is not None
        self._draw()

    def _follow_session(self, session) -> None:
        self.follow_moves(session, "reread")
        self._say_position()

    def _say_position(self) -> None:
        s = self._session
        self.position = str(s.position)
        self.editable = bool(s.at_present and not s.finished)

    def reread(self) -> None:
        """Show `name` as the session sees it now (after a move, an edit, a time-travel jump)."""
        s = self._session
        self._say_position()
        try:
            value = s.value(self.name)
        except Exception as e:  # not visible at this position: say so rather than keep the old value
            self._value_gone(error_text(e))
            return
        if value is None:  # the variable exists where the cursor is, but nothing wrote it there yet
            self._value_gone(f"{self.name!r} has no value at {self.position} yet")
            return
        if not (hasattr(value, "shape") and hasattr(value, "dtype")) or value.dtype.kind not in "biufc":
            self._value_gone(f"{self.name!r} is no numeric tensor at {self.position}")
            return
        prev = diff_base(s, self.name, value)
        self._previous = prev if prev is not None and getattr(prev, "shape", None) == value.shape else None
        self._show_value(value)

    def _value_gone(self, why: str) -> None:
        self.slice, self.health = {}, {}
        self.editable = False
        self.status = why

    @classmethod
    def of(cls, session, name: str, **kw) -> TensorViewer:
        """`name` as a debug session sees it at its cursor, diffed against the value written before."""
        if not isinstance(session, kc.DebugSession):
            raise TypeError(f"TensorViewer.of takes a kc.DebugSession, got {type(session).__name__}")
        value = session.value(name)
        return cls(value, name=name, previous=diff_base(session, name, value), session=session, **kw)

    @property
    def value(self):
        return self._value

    def shown(self):
        """The array the view shows: the value, or value - previous in diff mode (on the value's device)."""
        if self.diff and self._previous is not None:
            xp = place_of(self._value).xp
            return xp.subtract(self._value.astype(xp.float64) if self._value.dtype.kind in "biu" else self._value,
                               self._previous)
        return self._value

    def _draw(self) -> None:
        d = draw(self.shown(), self.axes, self.index, self.diff and self._previous is not None)
        self.slice, self.health, self.status = d["slice"], d["health"], d["status"]

    def set_view(self, axes=None, index=None, diff=None) -> None:
        shape = [int(d) for d in self._value.shape]
        axes_, index_ = check_view(shape, self.axes if axes is None else axes,
                                   self.index if index is None else index)
        if diff is not None and not isinstance(diff, bool):
            raise RequestError(f"diff must be true or false, got {brief(diff)}")
        self.axes, self.index = axes_, index_
        if diff is not None:
            self.diff = diff and self._previous is not None
        self._draw()

    def send_to_notebook(self, name: str, what: str = "value", overwrite: bool = False) -> Any:
        """Bind the value (what="value") or the shown slice (what="slice") to `name` in the kernel's namespace
        (a copy on the host). A name already defined is replaced only with `overwrite` (NameTaken else)."""
        if what == "slice":
            obj, replaced = send_value(self.shown(), name, self._namespace, (self.axes, self.index), overwrite)
        else:
            obj, replaced = send_value(self._value, name, self._namespace, overwrite=overwrite)
        self.name_taken = {}
        self.status = f"sent the {what} to the notebook as {name!r}" + (
            f" (replacing the old {name!r}, as confirmed)" if replaced else "")
        return obj

    # -- edits at a pause ------------------------------------------------------------------------------------
    def zero(self):
        """Set the variable to zeros where the session waits (the run forks). Returns the Fork."""
        return self.set_value(tensor_edit.zeroed(self._value))

    def set_cell(self, index, value):
        """Set one element (index: one integer per axis; value: a number, or "nan" / "inf" / "-inf")."""
        return self.set_value(tensor_edit.with_cell(self._value, index, value))

    def replace_with(self, source: str):
        """Set the variable to the notebook variable `source` (same shape; a dtype that casts to its kind)."""
        return self.set_value(tensor_edit.from_namespace(source, user_namespace(self._namespace), self._value))

    def set_value(self, array):
        """sess.set_value(name, array) on the session this viewer follows: the run forks, the trace records
        the edit, and the viewer shows the new value diffed against the old."""
        s = self._session
        if s is None:
            raise RequestError("this viewer shows an array, not a paused session's variable: nothing to edit "
                               "(TensorViewer.of(session, name) edits)")
        old = self._value
        fork = s.set_value(self.name, array)
        self.edits += 1
        self._previous = old
        self._value = s.value(self.name)
        self._show_value(self._value)
        self.status = f"{s.stop_reason}; the trace records the edit (event {fork.event})"
        return fork

    def copy_value(self) -> str:
        """The value as a NumPy literal (refused past tensor_edit.MAX_LITERAL characters)."""
        return tensor_edit.numpy_literal(self._value)

    # -- messages ----------------------------------------------------------------------------------------
    _failed_words = {"view": "cannot show that", "send": "not sent", "edit": "not edited", "copy": "not copied"}

    def _on_edit(self, content) -> None:
        what = choice_arg(content, "what", ("zero", "cell", "replace"))
        if not self.editable:
            raise RequestError(f"{self.name or 'the value'} can be edited only at a pause in the present of a "
                               "running session")
        if what == "zero":
            self.zero()
        elif what == "cell":
            self.set_cell(content.get("index"), content.get("value"))
        else:
            self.replace_with(str_arg(content, "source", max_len=100))

    def _on_copy(self, _content) -> None:
        self.send({"type": "copied", "text": self.copy_value()})
        self.status = "copied the value as a NumPy literal"

    def _on_view(self, content) -> None:
        self.set_view(content.get("axes"), content.get("index"), content.get("diff"))

    def _on_send(self, content) -> None:
        what = choice_arg(content, "what", ("value", "slice"), default="value")
        overwrite = bool_arg(content, "overwrite")
        try:
            self.send_to_notebook(content.get("name"), what, overwrite)
        except NameTaken as e:  # the view shows the proposed name and an Overwrite button
            self.name_taken = {**e.to_json(), "what": what}
            raise

    def _messages(self) -> dict:
        return {"view": self._on_view, "send": self._on_send, "edit": self._on_edit, "copy": self._on_copy}


def _same(a, b) -> bool:
    return a is b or (getattr(a, "shape", None) == getattr(b, "shape", None) and bool((to_host(a) == to_host(b)).all()))
