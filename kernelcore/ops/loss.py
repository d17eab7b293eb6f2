"""Losses and metrics, and the ranking ops metrics are built from (top_k, arg_max).

Hard labels are class indices (int64 or int32) with a dim of size 1 where the class dim was; a label
equal to `ignore_index` gives a loss of 0. Any other label outside [0, classes) is an error, as in
Paddle. Losses on probabilities take Paddle's "tolerable" log: log(0) counts as -1e20, not -inf.
"""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, at_least, one_of, register_op
from ..ir.shape_inference import dims_match
from ._infer import merge_dims, normalize_axis

APPROX_INF = 1e20  # Paddle's TolerableValue: the stand-in for an infinite log


def _fail(message: str):
    raise ValueError(message)


def tolerable_log(xp, p):
    """log(p), with log(0) = -1e20 (Paddle's TolerableValue) so a zero probability gives a huge but
    finite loss, and with no divide-by-zero warning. A negative p gives NaN, as log does."""
    one, pos = p.dtype.type(1), p > 0
    logs = xp.log(xp.where(pos, p, one))
    return xp.where(pos, logs, xp.where(p == 0, p.dtype.type(-APPROX_INF), p.dtype.type(xp.nan)))


def pick_labels(xp, x, label, axis: int, ignore_index: int):
    """x's entries at the class indices `label` along `axis` (label has x's rank and size 1 there).
    Returns (picked, keep): keep is False where the label is ignore_index (picked is junk there)."""
    lab = label.astype(xp.int64, copy=False)
    keep = lab != ignore_index
    classes = x.shape[axis]
    bad = keep & ((lab < 0) | (lab >= classes))
    if bool(bad.any()):  # one device sync; an out-of-range gather would read garbage silently
        raise ValueError(f"Label holds {int(lab[bad].ravel()[0])}, outside [0, {classes}) and not "
                         f"ignore_index ({ignore_index})")
    safe = xp.where(keep, lab, 0)
    return xp.take_along_axis(x, safe, axis=axis), keep


def _check_label_dtype(ic, soft: bool, x_slot: str) -> None:
    lt = ic.dtype("Label")
    if soft and lt != ic.dtype(x_slot):
        ic.fail(f"soft_label=true needs a Label of {x_slot}'s dtype {ic.dtype_name(ic.dtype(x_slot))}, "
                f"got {ic.dtype_name(lt)}")
    if not soft and lt not in (VT.INT64, VT.INT32):
        ic.fail(f"hard labels (soft_label=false) are class indices: expected int64 or int32, "
                f"got {ic.dtype_name(lt)}")


def _shapes_match(a, b) -> bool:
    return len(a) == len(b) and all(dims_match(p, q) for p, q in zip(a, b))


# -- cross_entropy ---------------------------------------------------------------
def _infer_cross_entropy(ic):
    x, lab, soft = ic.shape("X"), ic.shape("Label"), ic.attr("soft_label")
    r = len(x)
    if r == 0:
        ic.fail("X must have rank >= 1 (its last dim holds the classes)")
    if soft:
        if len(lab) != r or not _shapes_match(lab, x):
            ic.fail(f"soft_label=true: Label {list(lab)} must have X's shape {list(x)}")
    elif len(lab) == r:
        if not (_shapes_match(lab[:-1], x[:-1]) and dims_match(lab[-1], 1)):
            ic.fail(f"Label {list(lab)} must be X's shape {list(x)} with the last dim 1, "
                    f"i.e. {list(x[:-1]) + [1]} (or {list(x[:-1])})")
    elif len(lab) != r - 1 or not _shapes_match(lab, x[:-1]):
        ic.fail(f"Label {list(lab)} must be {list(x[:-1]) + [1]} or {list(x[:-1])} for X {list(x)}")
    _check_label_dtype(ic, soft, "X")
    y = merge_dims(x[:-1], lab[:r - 1])
    ic.set_output("Y", y + (1,) if len(lab) == r else y, ic.dtype("X"))


CROSS_ENTROPY = register_op(
    "cross_entropy", "Cross entropy of probabilities X (e.g. a softmax output) against Label, over the "
                     "last dim. Hard labels: Y = -log(X[..., Label]) (0 where Label == ignore_index). Soft "
                     "labels: Y = -sum(Label * log(X)) over the last dim. log(0) counts as -1e20.",
    inputs=[In("X", "probabilities [..., C], summing to 1 over the last dim"),
            In("Label", "hard: int64/int32 class indices [..., 1] (or [...]); soft: a distribution of "
               "X's shape and dtype")],
    outputs=[Out("Y", "the loss: X's shape with the last dim 1 (Label's shape for a [...] Label)")],
    attrs=[Attr("soft_label", A.BOOLEAN, "Label holds distributions rather than class indices", False),
           Attr("ignore_index", A.INT, "a hard label with this value gives a loss of 0 (ignored for "
                "soft labels)", -100)],
    infer_shape=_infer_cross_entropy)


@CROSS_ENTROPY.kernel()
def cross_entropy(ctx, ins, attrs):
    xp = ctx.xp
    x, label = ins
    if attrs["soft_label"]:
        return (-(label * tolerable_log(xp, x)).sum(axis=-1, keepdims=True),)
    flat = label.ndim == x.ndim - 1
    p, keep = pick_labels(xp, x, label[..., None] if flat else label, -1, attrs["ignore_index"])
    y = xp.where(keep, -tolerable_log(xp, p), x.dtype.type(0))  # log of the picked entries only
    return (y[..., 0] if flat else y,)


# -- softmax_with_cross_entropy ---------------------------------------------------
def _infer_softmax_ce(ic):
    lg, lab, soft = ic.shape("Logits"), ic.shape("Label"), ic.attr("soft_label")
    axis = normalize_axis(ic.attr("axis"), len(lg), ic)
    if len(lab) != len(lg):
        ic.fail(f"Label {list(lab)} must have the rank of Logits {list(lg)}")
    if soft:
        if not _shapes_match(lab, lg):
            ic.fail(f"soft_label=true: Label {list(lab)} must have Logits' shape {list(lg)}")
    else:
        want = list(lg[:axis]) + [1] + list(lg[axis + 1:])
        if not _shapes_match(lab, want):
            ic.fail(f"Label {list(lab)} must be Logits' shape {list(lg)} with dim {axis} (the class dim) "
                    f"of size 1, i.e. {want}")
    _check_label_dtype(ic, soft, "Logits")
    ic.set_output("Softmax", lg, ic.dtype("Logits"))
    ic.set_output("Loss", tuple(1 if i == axis else d for i, d in enumerate(lg)), ic.dtype("Logits"))


SOFTMAX_CE = register_op(
    "softmax_with_cross_entropy",
    "Softmax of Logits along `axis`, then cross entropy against Label, fused. Loss is computed from the "
    "log-softmax (Logits minus max minus log-sum-exp), so large logits neither overflow nor give "
    "log(0). Hard labels: Loss = -log_softmax[Label] (0 where Label == ignore_index); soft labels: "
    "Loss = -sum(Label * log_softmax) along `axis`. With use_softmax=false, Logits are taken as "
    "probabilities (Softmax = Logits, log as in cross_entropy).",
    inputs=[In("Logits", "unnormalised scores; `axis` is the class dim"),
            In("Label", "hard: int64/int32 class indices, Logits' shape with the class dim 1; soft: a "
               "distribution of Logits' shape and dtype")],
    outputs=[Out("Softmax", "softmax of Logits along `axis` (kept for the gradient)", intermediate=True),
             Out("Loss", "the loss: Logits' shape with the class dim 1")],
    attrs=[Attr("soft_label", A.BOOLEAN, "Label holds distributions rather than class indices", False),
           Attr("use_softmax", A.BOOLEAN, "false: Logits already are probabilities; skip the softmax", True),
           Attr("numeric_stable_mode", A.BOOLEAN, "Paddle's GPU switch to the log-softmax form; "
                "kernelcore always uses that form", True),
           Attr("ignore_index", A.INT, "a hard label with this value gives a loss of 0 (ignored for soft "
                "labels)", -100),
           Attr("axis", A.INT, "the class dim, in [-rank, rank)", -1)],
    infer_shape=_infer_softmax_ce)


@SOFTMAX_CE.kernel()
def softmax_with_cross_entropy(ctx, ins, attrs):
    xp = ctx.xp
    logits, label = ins
    axis = normalize_axis(attrs["axis"], logits.ndim)
    soft, ignore = attrs["soft_label"], attrs["ignore_index"]
    zero = logits.dtype.type(0)
    if not attrs["use_softmax"]:
        if soft:
            return logits.copy(), -(label * tolerable_log(xp, logits)).sum(axis=axis, keepdims=True)
        p, keep = pick_labels(xp, logits, label, axis, ignore)
        return logits.copy(), xp.where(keep, -tolerable_log(xp, p), zero)
    shifted = logits - logits.max(axis=axis, keepdims=True)
    softmax = xp.exp(shifted)
    total = softmax.sum(axis=axis, keepdims=True)
    softmax /= total  # our own array: normalise in place
    log_total = xp.log(total)  # >= 0: the max entry contributes exp(0) = 1
    if soft:
        loss = (label * (log_total - shifted)).sum(axis=axis, keepdims=True)
    else:
        picked, keep = pick_labels(xp, shifted, label, axis, ignore)
        loss = xp.where(keep, log_total - picked, zero)
    return softmax, loss


# -- accuracy --------------------------------------------------------------------
def _infer_accuracy(ic):
    out, idx, lab = ic.shape("Out"), ic.shape("Indices"), ic.shape("Label")
    if len(idx) != 2:
        ic.fail(f"Indices {list(idx)} must be 2-D: [N, k] (top_k's Indices)")
    if not _shapes_match(out, idx):
        ic.fail(f"Out {list(out)} and Indices {list(idx)} must have the same shape (both from top_k)")
    if len(lab) != 2 or not dims_match(lab[1], 1):
        ic.fail(f"Label {list(lab)} must be [N, 1]")
    if not dims_match(lab[0], idx[0]):
        ic.fail(f"Label {list(lab)} has {lab[0]} rows but Indices {list(idx)} has {idx[0]}; expected equal")
    ic.set_output("Accuracy", (), VT.FP32)
    ic.set_output("Correct", (), VT.INT32)
    ic.set_output("Total", (), VT.INT32)


ACCURACY = register_op(
    "accuracy", "Top-k accuracy: a row counts as correct when its Label is among its k Indices. "
                "Accuracy = Correct / Total (0 for an empty batch).",
    inputs=[In("Out", "the top-k values [N, k] (only its shape is used)"),
            In("Indices", "the top-k class indices [N, k] (int64)"),
            In("Label", "the true classes [N, 1] (int64)")],
    outputs=[Out("Accuracy", "the fraction of correct rows: float32, 0-d"),
             Out("Correct", "how many rows are correct: int32, 0-d"),
             Out("Total", "how many rows there are: int32, 0-d")],
    infer_shape=_infer_accuracy)


@ACCURACY.kernel()
def accuracy(ctx, ins, attrs):
    xp = ctx.xp
    _, indices, label = ins
    n = indices.shape[0]
    if label.shape[0] != n:
        raise ValueError(f"Label {list(label.shape)} has {label.shape[0]} rows but Indices "
                         f"{list(indices.shape)} has {n}")
    hits = (indices == label.reshape(n, 1)).any(axis=1)
    correct = hits.sum(dtype=xp.int32)
    acc = correct.astype(xp.float32) / xp.float32(max(n, 1))  # an empty batch: 0 / 1
    return xp.asarray(acc), xp.asarray(correct), xp.asarray(n, dtype=xp.int32)


# -- top_k -----------------------------------------------------------------------
def _infer_top_k(ic):
    x, k = ic.shape("X"), ic.attr("k")
    if not x:
        ic.fail("X must have rank >= 1: top_k works along its last dim")
    if ic.has_input("K"):
        k = -1  # known only when the op runs
    elif x[-1] >= 0 and k > x[-1]:
        ic.fail(f"k is {k} but X {list(x)} has {x[-1]} entries in its last dim; expected k <= {x[-1]}")
    ic.set_output("Out", tuple(x[:-1]) + (k,), ic.dtype("X"))
    ic.set_output("Indices", tuple(x[:-1]) + (k,), VT.INT64)


TOP_K = register_op(
    "top_k", "The k largest entries along the last dim of X, largest first, and their indices. Equal "
             "values come in index order.",
    inputs=[In("X", "the input tensor, rank >= 1"),
            In("K", "a one-element int tensor that, when given, replaces the `k` attribute", dispensable=True)],
    outputs=[Out("Out", "the values: X's shape with the last dim k"),
             Out("Indices", "their positions in X's last dim: int64, Out's shape")],
    attrs=[Attr("k", A.INT, "how many entries to keep per row", 1, checks=(at_least(1),))],
    infer_shape=_infer_top_k)


def _descending(xp, x):
    """The order that sorts x's last dim largest first, equal values in index order: a stable ascending
    sort of the reversed row, read backwards (no negation, so any dtype works; NaN counts as largest)."""
    n = x.shape[-1]
    return (n - 1) - xp.flip(xp.argsort(xp.flip(x, axis=-1), axis=-1, kind="stable"), axis=-1)


def _top_k_indices(xp, x, k: int):
    n = x.shape[-1]
    if 4 * k >= n or x.dtype.kind not in "biuf" or (x.dtype.kind == "f" and bool(xp.isnan(x).any())):
        return _descending(xp, x)[..., :k]
    # k small against n: a sort of the whole row costs O(n log n); select in O(n) instead. Entries
    # above the k-th largest value are in; the slots left go to the first (lowest-index) entries equal
    # to it, so the choice among ties is deterministic. Then sort just those k.
    rows = x.reshape(-1, n)
    kth = xp.partition(rows, n - k, axis=-1)[:, n - k:n - k + 1]
    above, tied = rows > kth, rows == kth
    room = k - above.sum(axis=-1, keepdims=True)
    take = above | (tied & (xp.cumsum(tied, axis=-1, dtype=xp.int32) <= room))
    chosen = xp.nonzero(take)[1].reshape(-1, k)  # exactly k per row, in index order
    order = _descending(xp, xp.take_along_axis(rows, chosen, axis=-1))
    return xp.take_along_axis(chosen, order, axis=-1).reshape(x.shape[:-1] + (k,))


@TOP_K.kernel()
def top_k(ctx, ins, attrs):
    xp = ctx.xp
    x, k_tensor = ins
    k = attrs["k"] if k_tensor is None else int(k_tensor.reshape(-1)[0])  # k sets Out's shape: read it
    n = x.shape[-1] if x.ndim else 0
    if not 1 <= k <= n:
        raise ValueError(f"k is {k} but X {list(x.shape)} has {n} entries in its last dim; "
                         f"expected 1 <= k <= {n}")
    indices = _top_k_indices(xp, x, k).astype(xp.int64, copy=False)
    return xp.take_along_axis(x, indices, axis=-1), indices


# -- arg_max ---------------------------------------------------------------------
_INDEX_DTYPES = {-1: VT.INT64, VT.INT32: VT.INT32, VT.INT64: VT.INT64}


def _arg_max_shape(shape, axis, keepdims, flatten, fail):
    if flatten:
        return (1,) * len(shape) if keepdims else ()
    if not shape:
        if axis not in (-1, 0):
            fail(f"axis {axis} is out of range for a 0-d X; expected -1 or 0")
        return ()
    if not -len(shape) <= axis < len(shape):
        fail(f"axis {axis} is out of range for X {list(shape)}; expected -{len(shape)} <= axis < {len(shape)}")
    a = axis % len(shape)
    return tuple(1 if i == a else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i != a)


def _infer_arg_max(ic):
    x = ic.shape("X")
    out = _arg_max_shape(x, ic.attr("axis"), ic.attr("keepdims"), ic.attr("flatten"), ic.fail)
    ic.set_output("Out", out, _INDEX_DTYPES[ic.attr("dtype")])


ARG_MAX = register_op(
    "arg_max", "The index of the largest entry of X along `axis` (the first one when several are equal).",
    inputs=[In("X", "the input tensor")],
    outputs=[Out("Out", "the indices: X's shape without `axis` (size 1 with keepdims); int64 or int32")],
    attrs=[Attr("axis", A.LONG, "the dim to search along, in [-rank, rank); ignored with flatten"),
           Attr("keepdims", A.BOOLEAN, "keep `axis` (or, with flatten, every dim) as size 1", False),
           Attr("flatten", A.BOOLEAN, "search the flattened X: Out is 0-d (all ones with keepdims)", False),
           Attr("dtype", A.INT, "the index type as a VarType: 3 int64, 2 int32, -1 int64", VT.INT64,
                checks=(one_of(-1, VT.INT32, VT.INT64),))],
    infer_shape=_infer_arg_max)


@ARG_MAX.kernel()
def arg_max(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    shape = _arg_max_shape(x.shape, attrs["axis"], attrs["keepdims"], attrs["flatten"], _fail)
    dt = xp.int32 if _INDEX_DTYPES[attrs["dtype"]] == VT.INT32 else xp.int64
    if attrs["flatten"] or x.ndim == 0:
        r = xp.argmax(x.reshape(-1))
    else:
        r = xp.argmax(x, axis=attrs["axis"])
    return (xp.asarray(r).astype(dt).reshape(shape),)
