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
        if info is not None and info.kind == "tensor":
            v = node._values.get(name)
            if hasattr(v, "shape") and hasattr(v, "dtype"):
                return v, sid
    return None, None


def _diff(value, prev):
    xp = place_of(value).xp
    return xp.subtract(value.astype(xp.float64) if value.dtype.kind in "biu" else value, prev)


def tensor_json(sess, name: str, scope: int | None = None, axes=None, index=None, diff: bool = False) -> dict:
    """What the sidebar's tensor panel shows of `name` at the session's cursor (a TensorView of the schema):
    the TensorViewer's traits, the scope the value is from, and `exists` false (with a status saying so) when
    no scope holds it at this position."""
    where = str(sess.position)
    value, sid = find_value(sess, name, scope)
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
    prev = diff_base(sess, name, value)
    if prev is not None and getattr(prev, "shape", None) != value.shape:
        prev = None
    diff = diff and prev is not None
    d = draw(_diff(value, prev) if diff else value, axes, index, diff)
    out.update(shape=shape, dtype=str(value.dtype), place=str(place_of(value)), axes=axes, index=index, diff=diff,
               has_previous=prev is not None, slice=d["slice"], health=d["health"],
               status=d["status"] + f" (scope {sid}, at {where})")
    return out


def tensor_send(sess, namespace, name, scope, axes, index, diff, target, what, overwrite) -> dict:
    """Bind the value (or the shown slice) of a variable to `target` in the notebook (`namespace`; None: the
    IPython user namespace). A target that is taken is replaced only when the request says the person
    confirmed (`overwrite`); else NameTaken."""
    value, _sid = find_value(sess, name, scope)
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
