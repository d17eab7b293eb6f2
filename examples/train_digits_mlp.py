"""Train an MLP on scikit-learn's 8x8 digits with kernelcore: layers, append_backward, Adam.

Run:  python examples/train_digits_mlp.py [--epochs 20] [--batch-size 32] [--seed 0]

The network (64 -> 128 relu -> 64 relu -> dropout -> 10) is built with kernelcore.api.layers into a main and
a startup program; `kc.optimizer.Adam(...).minimize(loss)` appends the gradient ops and one `adam` op
per parameter. The startup program runs once (Xavier-uniform weights, zero biases, Adam's accumulators),
then every mini-batch is one `Executor.run(main, training=True)`. Test accuracy comes from a clone of the
forward program taken before minimize, run with training=False (dropout off).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm import tqdm

import kernelcore as kc
import digits_data

L = kc.layers


def build(hidden=(128, 64), dropout_prob=0.1, learning_rate=0.001):
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 64])
        label = L.data("label", [-1, 1], "int64")
        h = x
        for size in hidden:
            h = L.fc(h, size, act="relu")
        if dropout_prob:
            h = L.dropout(h, dropout_prob, dropout_implementation="upscale_in_train")
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
    # evaluation: a copy of the forward pass, plus accuracy (training steps need not compute it)
    test_program = main.clone()
    with kc.program_guard(test_program, startup):
        g = test_program.global_block()
        acc = L.accuracy(g.var(logits.name), g.var(label.name))
    with kc.program_guard(main, startup):
        kc.optimizer.Adam(learning_rate=learning_rate).minimize(loss, startup)
    return main, startup, test_program, loss, acc


def evaluate(exe, program, scope, acc, x, y) -> float:
    a, = exe.run(program, feed={"x": x, "label": y}, fetch_list=[acc], scope=scope, training=False)
    return float(a)


def train(epochs: int = 20, batch_size: int = 32, seed: int = 0, learning_rate: float = 0.001,
          progress: bool = True) -> dict:
    x_train, y_train, x_test, y_test = digits_data.load(seed)
    main, startup, test_program, loss, acc = build(learning_rate=learning_rate)
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(seed)
    scope = kc.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(seed)
    steps_per_epoch = -(-len(x_train) // batch_size)
    t0 = time.perf_counter()
    bar = tqdm(total=epochs * steps_per_epoch, desc="digits MLP", unit="step", disable=not progress)
    losses = []
    for epoch in range(epochs):
        for xb, yb in digits_data.batches(x_train, y_train, batch_size, rng):
            lv, = exe.run(main, feed={"x": xb, "label": yb}, fetch_list=[loss], scope=scope, training=True)
            losses.append(float(lv))
            bar.update(1)
        bar.set_postfix(epoch=epoch + 1, loss=f"{np.mean(losses[-steps_per_epoch:]):.4f}")
    bar.close()
    seconds = time.perf_counter() - t0
    return {"test_accuracy": evaluate(exe, test_program, scope, acc, x_test, y_test),
            "train_accuracy": evaluate(exe, test_program, scope, acc, x_train, y_train),
            "final_loss": float(np.mean(losses[-steps_per_epoch:])), "seconds": seconds,
            "steps": len(losses)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    r = train(args.epochs, args.batch_size, args.seed, args.lr)
    print(f"{r['steps']} steps in {r['seconds']:.1f} s; final train loss {r['final_loss']:.4f}")
    print(f"train accuracy {r['train_accuracy']:.4f}, test accuracy {r['test_accuracy']:.4f}")


if __name__ == "__main__":
    main()
