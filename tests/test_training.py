"""End-to-end training on real data (scikit-learn's 8x8 digits, shipped inside the package): reduced runs
of examples/train_digits_mlp.py and train_digits_rnn.py must reach an accuracy floor, and the Model API
must learn too. Each needs append_backward; the RNN also needs the `recurrent` op's gradient.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc

pytest.importorskip("sklearn", reason="scikit-learn (the `test` extra) provides the digits data")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

import digits_data  # noqa: E402


def test_digits_mlp_learns():
    import train_digits_mlp
    r = train_digits_mlp.train(epochs=6, learning_rate=0.003, progress=False)
    assert r["test_accuracy"] >= 0.93, r
    assert r["final_loss"] < 0.3, r


@pytest.mark.parametrize("cell", ["lstm", "simple_rnn"])
def test_digits_rnn_learns(cell):
    import train_digits_rnn
    r = train_digits_rnn.train(epochs=5, cell=cell, hidden=32, progress=False)
    assert r["test_accuracy"] >= 0.85, r
    assert r["final_loss"] < 0.5, r


def test_model_api_learns_digits():
    """The Model's training loop: fc_layer/cross_entropy/mean/backward/sgd, initialize_parameters, fill, run."""
    x_train, y_train, x_test, y_test = digits_data.load(1)
    model = kc.Model(scope=kc.Scope())
    model.executor.seed(1)
    hidden = model.fc_layer(input="img", size=64, activation="sigmoid", input_dim=64)
    prob = model.fc_layer(input=hidden, size=10, activation="softmax")
    avg_loss = model.mean(input=model.cross_entropy(input=prob, label="label"))
    acc = model.accuracy(prob, "label")
    params_grads = model.backward(avg_loss)
    assert set(params_grads) == {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"}
    assert all(g == p + "@GRAD" for p, g in params_grads.items())
    model.sgd(learning_rate=0.5)
    assert [op.type for op in model.network.global_block().ops].count("sgd") == 4
    model.initialize_parameters()
    rng = np.random.default_rng(1)
    first = None
    for epoch in range(8):
        for xb, yb in digits_data.batches(x_train, y_train, 32, rng):
            model.fill("img", xb)
            model.fill("label", yb)
            loss, = model.run(fetch=[avg_loss])
            first = float(loss) if first is None else first
    model.fill("img", x_test)
    model.fill("label", y_test)
    a, = model.run(fetch=[acc], training=False)
    assert float(loss) < first / 3
    assert float(a) >= 0.9
