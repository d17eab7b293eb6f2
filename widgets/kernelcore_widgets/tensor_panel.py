"""The sidebar's tensor panel: one variable's value at the debug session's cursor (`tensor`), and "send to
notebook" of that value or of its shown slice (`tensor_send`)."""
from __future__ import annotations

from kernelcore.runtime.place import place_of

from .requests import RequestError
from .tensor_viewer import check_view, diff_base, draw, send_value


def find_value(sess, name: str, scope: int | None):
    """`name`'s tensor at the cursor and the id of the scope holding it: as the cursor's op sees it, else in
    scope `scope` (where the panel was opened from), else in the last scope of the forest holding it.
    (None, None) when no scope holds a tensor of that name."""
    forest = sess.forest()
    inner = sess.position.innermost
    sid = inner.scope if inner is not None else (forest.roots[0] if forest.roots else None)
    chain = []
    while sid is not None and sid in forest:
        chain.append(sid)
        sid = forest[sid].parent
    order = chain + ([scope] if scope is not None and scope in forest else [])
    order += [n.id for n in reversed(list(forest)) if n.id not in order]
    for sid in order:
        node = forest[sid]
        info = node.vars.get(name)
        if info is not None and info.kind in ("tensor", "tensor_list"):
            v = node._values.get(name)
            if isinstance(v, list):
                return v, sid
            if hasattr(v, "shape") and hasattr(v, "dtype"):
                return v, sid
    return None, None


# the most entries of a tensor array the panel stacks into one view (a beam search's steps, an RNN's outputs)
MAX_ARRAY_ENTRIES = 4096


def array_as_tensor(entries: list):
    """A tensor array's entries stacked on a new leading axis (axis 0 picks the entry), and a line saying so;
    (None, why) when they cannot stack: holes, entries of other shapes or dtypes, too many."""
    n = len(entries)
    if n == 0:
        return None, "an empty tensor array"
    if n > MAX_ARRAY_ENTRIES:
        return None, f"a tensor array of {n} entries (the panel stacks at most {MAX_ARRAY_ENTRIES})"
    if any(e is None for e in entries):
        holes = [i for i, e in enumerate(entries) if e is None][:8]
        return None, f"a tensor array of {n} entries with no value at entries {holes}"
    first = entries[0]
    if any(getattr(e, "shape", None) != first.shape or getattr(e, "dtype", None) != first.dtype for e in entries):
        shapes = sorted({f"{getattr(e, 'dtype', type(e).__name__)} {list(getattr(e, 'shape', ()))}"
                         for e in entries})[:4]
        return None, f"a tensor array of {n} entries of different shapes or dtypes ({', '.join(shapes)})"
    xp = place_of(first).xp
    return xp.stack(entries), (f"a tensor array of {n} entries, each {first.dtype} {list(first.shape)}; "
                               "axis 0 picks the entry")


def _diff(value, prev):
    xp = place_of(value).xp
    return xp.subtract(value.astype(xp.float64) if value.dtype.kind in "biu" else value, prev)


def tensor_json(sess, name: str, scope: int | None = None, axes=None, index=None, diff: bool = False) -> dict:
    """What the sidebar's tensor panel shows of `name` at the session's cursor (a TensorView of the schema):
    the TensorViewer's traits, the scope the value is from, and `exists` false (with a status saying so) when
    no scope holds it at this position."""
    where = str(sess.position)
    value, sid = find_value(sess, name, scope)
    array_note = ""
    if isinstance(value, list):
        value, array_note = array_as_tensor(value)
        if value is None:
            return _no_tensor(name, sid, where, sess, f"{name!r} is {array_note} (scope {sid}, at {where})")
    out = {"name": name, "exists": value is not None, "scope": sid, "position_text": where, "pause": sess.pause_index,
           "shape": [], "dtype": "", "place": "", "axes": [0, 1], "index": [], "diff": False,
           "has_previous": False, "slice": None, "health": None}
    if value is None:
        out["status"] = f"{name!r} does not exist at {where}"
        return out
    if value.dtype.kind not in "biufc":
        out["status"] = f"{name!r} is {value.dtype}: the tensor viewer shows numeric tensors"
        return out
    shape = [int(d) for d in value.shape]
    try:
        axes, index = check_view(shape, axes, index)
    except ValueError:  # the variable changed shape since the panel asked (another timestep): start over
        axes, index = check_view(shape)
    prev = diff_base(sess, name, value) if not array_note else None  # an array's entries differ by step
    if prev is not None and getattr(prev, "shape", None) != value.shape:
        prev = None
    diff = diff and prev is not None
    d = draw(_diff(value, prev) if diff else value, axes, index, diff)
    out.update(shape=shape, dtype=str(value.dtype), place=str(place_of(value)), axes=axes, index=index, diff=diff,
               has_previous=prev is not None, slice=d["slice"], health=d["health"],
               status=(array_note + "; " if array_note else "") + d["status"] + f" (scope {sid}, at {where})")
    return out


def _no_tensor(name, sid, where, sess, status) -> dict:
    """The panel's reply for a variable that exists but has nothing to draw."""
    return {"name": name, "exists": True, "scope": sid, "position_text": where, "pause": sess.pause_index,
            "shape": [], "dtype": "", "place": "", "axes": [0, 1], "index": [], "diff": False,
            "has_previous": False, "slice": None, "health": None, "status": status}


def tensor_send(sess, namespace, name, scope, axes, index, diff, target, what, overwrite) -> dict:
    """Bind the value (or the shown slice) of a variable to `target` in the notebook (`namespace`; None: the
    IPython user namespace). A target that is taken is replaced only when the request says the person
    confirmed (`overwrite`); else NameTaken."""
    value, _sid = find_value(sess, name, scope)
    if isinstance(value, list):  # a tensor array goes as the panel shows it: its entries stacked
        value, why = array_as_tensor(value)
        if value is None:
            raise RequestError(f"{name!r} is {why}: nothing to send as one tensor")
    if value is None:
        raise RequestError(f"no tensor {name!r} at {sess.position}: nothing to send")
    if what == "slice":
        axes, index = check_view([int(d) for d in value.shape], axes, index)
        prev = diff_base(sess, name, value) if diff else None
        shown = _diff(value, prev) if prev is not None else value
        _, replaced = send_value(shown, target, namespace, (axes, index), overwrite=overwrite)
    else:
        _, replaced = send_value(value, target, namespace, overwrite=overwrite)
    return {"sent": target, "what": what, "name": name, "overwritten": replaced}
