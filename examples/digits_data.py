"""scikit-learn's handwritten digits (1,797 8x8 images, 10 classes) for the training examples.

`sklearn.datasets.load_digits` reads a copy that ships inside the scikit-learn package: nothing is
downloaded. Pixels (0..16) are scaled to [0, 1]; the split is a seeded shuffle, 80 % train / 20 % test,
stratified so every class keeps its share on both sides.
"""
from __future__ import annotations

import numpy as np


def load(seed: int = 0, test_fraction: float = 0.2):
    """(x_train, y_train, x_test, y_test): x float32 [N, 64] in [0, 1], y int64 [N, 1]."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = int(round(len(idx) * test_fraction))
        test.extend(idx[:k])
        train.extend(idx[k:])
    train, test = rng.permutation(train), rng.permutation(test)
    return x[train], y[train, None], x[test], y[test, None]


def batches(x, y, batch_size: int, rng: np.random.Generator):
    """Shuffled mini-batches covering every example once (the last one may be smaller)."""
    order = rng.permutation(len(x))
    for i in range(0, len(x), batch_size):
        j = order[i:i + batch_size]
        yield x[j], y[j]


def as_sequences(x):
    """[N, 64] images -> time-major [8, N, 8]: row r of every image is timestep r."""
    return np.ascontiguousarray(x.reshape(-1, 8, 8).transpose(1, 0, 2))
