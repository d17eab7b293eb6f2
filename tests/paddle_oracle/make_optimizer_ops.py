"""Make PaddlePaddle 3.3.1 (legacy IR) run its optimizer ops (sgd, momentum, adam) on seeded inputs.

    .venv-paddle/bin/python tests/paddle_oracle/make_optimizer_ops.py OUTDIR

Writes OUTDIR/optimizer_ops.json (a list of {id, op, attrs, inputs: [slot], outputs: [slot]}) and
OUTDIR/optimizer_ops.npz (`<id>/in/<slot>` and `<id>/out/<slot>` arrays). Each case is a one-op program
appended through the block API and run by Paddle's CPU executor. tests/test_optimizer_parity.py runs the
same op in kernelcore on the same inputs.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.enable_static()
rng = np.random.default_rng(20261122)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def adam_inputs(b1p=0.9, b2p=0.999, **extra):
    d = {"Param": f32(4, 5), "Grad": f32(4, 5), "LearningRate": np.array([0.01], np.float32),
         "Moment1": f32(4, 5) * 0.1, "Moment2": (rng.random((4, 5)) * 0.01).astype(np.float32),
         "Beta1Pow": np.array([b1p], np.float32), "Beta2Pow": np.array([b2p], np.float32)}
    d.update(extra)
    return d


ADAM_OUTS = ["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"]
P, G, V, LR = f32(4, 5), f32(4, 5), f32(4, 5), np.array([0.05], np.float32)
CASES = [
    ("sgd", "sgd", {"Param": P, "LearningRate": LR, "Grad": G}, ["ParamOut"], {}),
    ("momentum", "momentum", {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR},
     ["ParamOut", "VelocityOut"], {"mu": 0.9}),
    ("momentum_nesterov_l2", "momentum", {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR},
     ["ParamOut", "VelocityOut"],
     {"mu": 0.85, "use_nesterov": True, "regularization_method": "l2_decay", "regularization_coeff": 0.02}),
    ("adam_first_step", "adam", adam_inputs(), ADAM_OUTS, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}),
    ("adam_step9", "adam", adam_inputs(0.9 ** 9, 0.999 ** 9), ADAM_OUTS,
     {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6}),
    ("adam_betas", "adam", adam_inputs(0.6 ** 2, 0.95 ** 2), ADAM_OUTS, {"beta1": 0.6, "beta2": 0.95, "epsilon": 1e-3}),
    ("adam_amsgrad", "adam", adam_inputs(Moment2Max=(rng.random((4, 5)) * 0.02).astype(np.float32)),
     ADAM_OUTS + ["Moment2MaxOut"], {"amsgrad": True}),
    ("adam_hyper_tensors", "adam",
     adam_inputs(Beta1Tensor=np.array([0.7], np.float32), Beta2Tensor=np.array([0.99], np.float32),
                 EpsilonTensor=np.array([1e-4], np.float32)), ADAM_OUTS, {}),
    ("adam_skip", "adam", adam_inputs(SkipUpdate=np.array([True])), ADAM_OUTS, {}),
]


def run_case(op, inputs, outs, attrs):
    main = paddle.static.Program()
    with paddle.static.program_guard(main):
        b = main.global_block()
        ins = {k: [b.create_var(name=f"in_{k}", shape=v.shape, dtype=str(v.dtype))] for k, v in inputs.items()}
        outv = {k: [b.create_var(name=f"out_{k}", dtype="float32")] for k in outs}
        b.append_op(type=op, inputs=ins, outputs=outv, attrs=dict(attrs))  # Paddle adds op_role to the dict
    exe = paddle.static.Executor(paddle.CPUPlace())
    vals = exe.run(main, feed={f"in_{k}": v for k, v in inputs.items()}, fetch_list=[f"out_{k}" for k in outs])
    return dict(zip(outs, vals))


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    meta, arrays = [], {}
    for cid, op, inputs, outs, attrs in CASES:
        got = run_case(op, inputs, outs, attrs)
        meta.append({"id": cid, "op": op, "attrs": attrs, "inputs": list(inputs), "outputs": outs})
        for k, v in inputs.items():
            arrays[f"{cid}/in/{k}"] = v
        for k, v in got.items():
            arrays[f"{cid}/out/{k}"] = np.asarray(v)
    with open(os.path.join(outdir, "optimizer_ops.json"), "w") as f:
        json.dump(meta, f, indent=1)
    np.savez(os.path.join(outdir, "optimizer_ops.npz"), **arrays)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/paddle_oracle/out/p3")
