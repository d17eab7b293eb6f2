"""kernelcore's side of the training-step benchmarks (bench/cnn_train.py, bench/transformer_models.py): one step of
a Paddle-written training program from its initial persistables, and the check of that step against Paddle's."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import kernelcore as kc


class KcTrainStep:
    """OUTDIR/NAME.main.pb run by Executor.run(training=True) on NAME.npz's feeds, from its init/ persistables."""

    def __init__(self, outdir: Path, name: str, feed_names=None):
        self.meta = json.loads((outdir / f"{name}.json").read_text())
        self.ref = np.load(outdir / f"{name}.npz")
        self.prog = kc.load_program(outdir / f"{name}.main.pb")
        self.init = {k[len("init/"):]: self.ref[k] for k in self.ref.files if k.startswith("init/")}
        self.feed = {n: self.ref[n] for n in (feed_names or self.meta["feed_names"])}
        self.exe = kc.Executor(kc.CPUPlace())
        self.scope = kc.Scope()

    def reset(self):
        # the scope's own copies, as a training loop's parameters are (PyTorch's side copies into its own
        # tensors): the update then lands in them in place (kernelcore/ops/optimizer.py)
        for n, v in self.init.items():
            self.scope.set(n, v.copy())

    def step(self):
        return self.exe.run(self.prog, feed=self.feed, fetch_list=[self.meta["loss_name"]], scope=self.scope,
                            training=True)

    def mismatches(self, skip=()) -> tuple[float, int, list[str]]:
        """One step from the initial persistables: (|loss - Paddle's|, updated persistables compared, those beyond
        tests/test_paddle_vision.py's tolerance: rtol 1e-4, atol max(1e-4 * max|Paddle's|, 1e-6), the floor for
        gradients that are exactly 0, such as a bias feeding a batch norm, where both compute float32 noise).
        Persistables named in `skip` are not compared."""
        self.reset()
        (loss,) = self.step()
        bad, compared = [], 0
        for k in self.ref.files:
            name = k[len("after/"):]
            if k.startswith("after/") and name not in skip:
                got, want = kc.runtime.place.to_host(self.scope.find_var(name).value), self.ref[k]
                compared += 1
                if not np.allclose(got, want, rtol=1e-4, atol=max(1e-4 * float(np.abs(want).max()), 1e-6)):
                    bad.append(f"{name} (max|diff| {float(np.abs(got - want).max()):.1e})")
        return abs(float(np.asarray(loss).reshape(-1)[0]) - float(self.ref["loss"])), compared, bad
