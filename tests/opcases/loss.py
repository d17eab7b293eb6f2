"""Cases for kernelcore/ops/loss.py: cross_entropy, softmax_with_cross_entropy, accuracy, top_k, arg_max.

References are the textbook formulas in float64 NumPy, written row by row where that is clearer
(softmax = exp / sum, loss = -log p[label], -sum(q log p)); Paddle's conventions on top: a label equal
to ignore_index gives 0, log(0) counts as -1e20, the loss keeps the class dim with size 1.
"""
import numpy as np

from . import Case

rng = np.random.default_rng(2)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def probs(*shape, dtype=np.float32):
    e = np.exp(rng.standard_normal(shape))
    return (e / e.sum(-1, keepdims=True)).astype(dtype)


def labels(n, classes, shape_tail=(1,)):
    return rng.integers(0, classes, size=(n, *shape_tail)).astype(np.int64)


def log_clipped(p):
    """Paddle's tolerable log: log(0) = -1e20."""
    p = np.asarray(p, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(p == 0, -1e20, np.log(p))


def ce_ref(X, Label, soft_label=False, ignore_index=-100, **a):
    X64 = X.astype(np.float64)
    if soft_label:
        y = -(Label * log_clipped(X64)).sum(-1, keepdims=True)
        return {"Y": y.astype(X.dtype)}
    lab = Label.reshape(-1)
    rows = X64.reshape(-1, X.shape[-1])
    y = np.array([0.0 if l == ignore_index else -log_clipped(rows[i, l]) for i, l in enumerate(lab)])
    shape = Label.shape if Label.ndim == X.ndim - 1 else X.shape[:-1] + (1,)
    return {"Y": y.reshape(shape).astype(X.dtype)}


def swce_ref(Logits, Label, soft_label=False, ignore_index=-100, axis=-1, use_softmax=True, **a):
    """Move the class axis last, do it row by row, move it back."""
    x = np.moveaxis(Logits.astype(np.float64), axis, -1)
    lab = np.moveaxis(Label, axis, -1)
    rows = x.reshape(-1, x.shape[-1])
    if use_softmax:
        sm = np.array([np.exp(r - r.max()) / np.exp(r - r.max()).sum() for r in rows])
        logp = np.array([r - r.max() - np.log(np.exp(r - r.max()).sum()) for r in rows])
    else:
        sm, logp = rows, log_clipped(rows)
    if soft_label:
        loss = -(lab.reshape(rows.shape) * logp).sum(-1)
    else:
        loss = np.array([0.0 if l == ignore_index else -logp[i, l] for i, l in enumerate(lab.reshape(-1))])
    loss = np.moveaxis(loss.reshape(x.shape[:-1] + (1,)), -1, axis)
    softmax = np.moveaxis(sm.reshape(x.shape), -1, axis)
    return {"Softmax": softmax.astype(Logits.dtype), "Loss": loss.astype(Logits.dtype)}


def accuracy_ref(Out, Indices, Label):
    correct = sum(int(Label[i, 0] in Indices[i]) for i in range(len(Label)))
    total = len(Label)
    return {"Accuracy": np.asarray(correct / total if total else 0.0, np.float32),
            "Correct": np.asarray(correct, np.int32), "Total": np.asarray(total, np.int32)}


def top_k_ref(X, K=None, k=1):
    if K is not None:
        k = int(K.reshape(-1)[0])
    rows = X.reshape(-1, X.shape[-1])
    # largest first; equal values in index order: sort by (-value, index)
    idx = np.array([sorted(range(len(r)), key=lambda j: (-float(r[j]), j))[:k] for r in rows], np.int64)
    idx = idx.reshape(X.shape[:-1] + (k,))
    return {"Out": np.take_along_axis(X, idx, -1), "Indices": idx}


def arg_max_ref(X, axis, keepdims=False, flatten=False, dtype=3):
    dt = np.int32 if dtype == 2 else np.int64
    if flatten:
        i = int(np.argmax(X.reshape(-1)))
        return {"Out": np.full((1,) * X.ndim if keepdims else (), i, dt)}
    out = np.argmax(X, axis=axis)
    if keepdims:
        out = np.expand_dims(out, axis)
    return {"Out": np.asarray(out, dt)}


P45 = probs(4, 5)
P45_ZERO = P45.copy()
P45_ZERO[0, 2] = 0.0  # log(0): Paddle's loss is 1e20, not inf
LAB4 = np.array([[0], [3], [4], [1]], np.int64)
LOGITS = f32(6, 7)
TIES = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2]], np.float32)

CASES = [
    # -- cross_entropy ------------------------------------------------------------------
    Case("cross_entropy", {"X": P45, "Label": LAB4}, ce_ref, id="ce_hard"),
    Case("cross_entropy", {"X": P45, "Label": LAB4}, ce_ref, attrs={"ignore_index": 3}, id="ce_hard_ignore_index"),
    Case("cross_entropy", {"X": P45, "Label": LAB4.reshape(-1)}, ce_ref, id="ce_hard_label_without_last_dim"),
    Case("cross_entropy", {"X": P45, "Label": LAB4.astype(np.int32)}, ce_ref, id="ce_hard_int32_label"),
    Case("cross_entropy", {"X": probs(2, 3, 6, dtype=np.float64), "Label": labels(2, 6, (3, 1))}, ce_ref,
         id="ce_hard_3d_f64"),
    Case("cross_entropy", {"X": P45_ZERO, "Label": np.array([[2], [0], [1], [4]], np.int64)}, ce_ref,
         id="ce_hard_zero_probability"),
    Case("cross_entropy", {"X": P45, "Label": probs(4, 5)}, ce_ref, attrs={"soft_label": True}, id="ce_soft"),
    Case("cross_entropy", {"X": P45_ZERO, "Label": probs(4, 5)}, ce_ref, attrs={"soft_label": True},
         id="ce_soft_zero_probability", rtol=1e-5),
    # -- softmax_with_cross_entropy ---------------------------------------------------------
    Case("softmax_with_cross_entropy", {"Logits": LOGITS, "Label": labels(6, 7)}, swce_ref, id="swce_hard"),
    Case("softmax_with_cross_entropy", {"Logits": LOGITS, "Label": np.array([[0], [6], [0], [2], [3], [0]])},
         swce_ref, attrs={"ignore_index": 0}, id="swce_ignore_index_0"),
    Case("softmax_with_cross_entropy", {"Logits": LOGITS, "Label": np.array([[1], [-100], [5], [2], [0], [6]])},
         swce_ref, id="swce_default_ignore_index"),
    Case("softmax_with_cross_entropy", {"Logits": LOGITS, "Label": probs(6, 7)}, swce_ref,
         attrs={"soft_label": True}, id="swce_soft"),
    Case("softmax_with_cross_entropy", {"Logits": LOGITS, "Label": probs(6, 7)}, swce_ref,
         attrs={"soft_label": True, "ignore_index": 0}, id="swce_soft_ignores_ignore_index"),
    Case("softmax_with_cross_entropy", {"Logits": f32(2, 5, 3), "Label": labels(2, 5, (1, 3))}, swce_ref,
         attrs={"axis": 1}, id="swce_axis1"),
    Case("softmax_with_cross_entropy",
         {"Logits": f32(2, 3, 4).astype(np.float64), "Label": labels(2, 3, (4,)).reshape(2, 1, 4)},
         swce_ref, attrs={"axis": -2}, id="swce_axis_neg2_f64"),
    Case("softmax_with_cross_entropy", {"Logits": LOGITS, "Label": labels(6, 7)}, swce_ref,
         attrs={"numeric_stable_mode": False}, id="swce_numeric_stable_mode_off"),
    Case("softmax_with_cross_entropy", {"Logits": probs(4, 5), "Label": LAB4}, swce_ref,
         attrs={"use_softmax": False}, id="swce_use_softmax_false"),
    Case("softmax_with_cross_entropy", {"Logits": np.array([[0, 100, -100, 50, 0]], np.float32),
                                        "Label": np.array([[2]], np.int64)},
         swce_ref, id="swce_extreme_logits_stay_finite", rtol=1e-6, atol=1e-4),
    Case("softmax_with_cross_entropy", {"Logits": np.ones((3, 4), np.float32), "Label": LAB4[:3] % 4},
         swce_ref, id="swce_uniform_logits"),
    # -- accuracy ---------------------------------------------------------------------------------
    Case("accuracy", {"Out": np.ones((4, 2), np.float32),
                      "Indices": np.array([[0, 1], [2, 3], [1, 0], [4, 2]], np.int64),
                      "Label": np.array([[1], [0], [1], [2]], np.int64)}, accuracy_ref, id="accuracy_top2"),
    Case("accuracy", {"Out": np.ones((5, 1), np.float32), "Indices": labels(5, 3), "Label": labels(5, 3)},
         accuracy_ref, id="accuracy_top1"),
    Case("accuracy", {"Out": np.ones((0, 2), np.float32), "Indices": np.zeros((0, 2), np.int64),
                      "Label": np.zeros((0, 1), np.int64)}, accuracy_ref, id="accuracy_empty_batch"),
    # -- top_k -------------------------------------------------------------------------------------
    Case("top_k", {"X": f32(3, 6)}, top_k_ref, attrs={"k": 2}, id="top_k_2"),
    Case("top_k", {"X": f32(2, 3, 5).astype(np.float64)}, top_k_ref, attrs={"k": 5}, id="top_k_all_3d_f64"),
    Case("top_k", {"X": f32(4, 7)}, top_k_ref, id="top_k_default_1"),
    Case("top_k", {"X": TIES}, top_k_ref, attrs={"k": 3}, id="top_k_ties_in_index_order"),
    Case("top_k", {"X": f32(3, 6), "K": np.array([4], np.int32)}, top_k_ref, attrs={"k": 1}, id="top_k_K_tensor"),
    Case("top_k", {"X": rng.integers(-5, 5, (3, 6)).astype(np.int64)}, top_k_ref, attrs={"k": 3}, id="top_k_int64"),
    # k small against the row: the kernel selects instead of sorting the whole row
    Case("top_k", {"X": f32(5, 64)}, top_k_ref, attrs={"k": 3}, id="top_k_select_path"),
    Case("top_k", {"X": rng.standard_normal((2, 3, 50))}, top_k_ref, attrs={"k": 2}, id="top_k_select_path_3d_f64"),
    Case("top_k", {"X": rng.integers(0, 4, (6, 40)).astype(np.int64)}, top_k_ref, attrs={"k": 5},
         id="top_k_select_path_boundary_ties"),
    Case("top_k", {"X": np.zeros((2, 30), np.float32)}, top_k_ref, attrs={"k": 4}, id="top_k_select_path_all_equal"),
    # -- arg_max ---------------------------------------------------------------------------------------
    Case("arg_max", {"X": f32(3, 4)}, arg_max_ref, attrs={"axis": 1}, id="arg_max_axis1"),
    Case("arg_max", {"X": f32(3, 4, 2)}, arg_max_ref, attrs={"axis": -2, "keepdims": True}, id="arg_max_keepdims"),
    Case("arg_max", {"X": f32(3, 4)}, arg_max_ref, attrs={"axis": 0, "flatten": True}, id="arg_max_flatten_0d"),
    Case("arg_max", {"X": f32(3, 4)}, arg_max_ref, attrs={"axis": 0, "flatten": True, "keepdims": True},
         id="arg_max_flatten_keepdims"),
    Case("arg_max", {"X": f32(3, 4)}, arg_max_ref, attrs={"axis": 1, "dtype": 2}, id="arg_max_int32"),
    Case("arg_max", {"X": TIES}, arg_max_ref, attrs={"axis": -1, "dtype": -1}, id="arg_max_ties_first"),
]
