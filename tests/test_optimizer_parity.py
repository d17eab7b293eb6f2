"""kernelcore's sgd / momentum / adam give Paddle's results on the same inputs, and a training program
Paddle wrote (forward, backward and sgd ops) trains in kernelcore as it does in Paddle.

Paddle runs in its own venv (see test_paddle_parity.py); without it these tests skip.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.formats import paddle_files

pytestmark = pytest.mark.paddle

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "paddle_oracle"
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"


def _run_paddle(*args):
    if not PADDLE3.exists():
        pytest.skip(f"no Paddle 3.3.1 oracle at {PADDLE3.parent.parent}: run ./dev test")
    env = dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    r = subprocess.run([str(PADDLE3), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"Paddle failed: {r.stdout[-2000:]}\n{r.stderr[-2000:]}")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    out = tmp_path_factory.mktemp("paddle_opt")
    _run_paddle(ORACLE / "make_optimizer_ops.py", out)
    return json.loads((out / "optimizer_ops.json").read_text()), np.load(out / "optimizer_ops.npz")


def _case_ids():
    # the ids make_optimizer_ops.py writes (kept in step by test_every_paddle_case_ran)
    return ["sgd", "momentum", "momentum_nesterov_l2", "adam_first_step", "adam_step9", "adam_betas",
            "adam_amsgrad", "adam_hyper_tensors", "adam_skip"]


@pytest.mark.parametrize("cid", _case_ids())
def test_optimizer_op_matches_paddle(oracle, cid):
    meta, arrays = oracle
    case = next((c for c in meta if c["id"] == cid), None)
    assert case is not None, f"Paddle's oracle wrote no case {cid!r}"
    prog = kc.Program()
    block = prog.global_block()
    feed = {}
    for slot in case["inputs"]:
        v = arrays[f"{cid}/in/{slot}"]
        block.create_var(f"in_{slot}", v.shape, v.dtype)
        feed[f"in_{slot}"] = v
    outs = {slot: [f"out_{slot}"] for slot in case["outputs"]}
    block.append_op(case["op"], inputs={s: [f"in_{s}"] for s in case["inputs"]}, outputs=outs,
                    attrs=case["attrs"])
    got = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[f"out_{s}" for s in case["outputs"]],
                                         scope=kc.Scope())
    for slot, g in zip(case["outputs"], got):
        want = arrays[f"{cid}/out/{slot}"]
        assert g.shape == want.shape or g.size == want.size, (slot, g.shape, want.shape)
        np.testing.assert_allclose(g.reshape(want.shape), want, rtol=2e-6, atol=1e-7, err_msg=f"{cid}: {slot}")


def test_every_paddle_case_ran(oracle):
    meta, _ = oracle
    assert sorted(c["id"] for c in meta) == sorted(_case_ids())


# ---------------------------------------------------------------------------------------------------------
def test_paddle_training_program_trains_in_kernelcore(tmp_path):
    """make_programs.py's train_mlp: Paddle's own main program (fc/relu/softmax_with_cross_entropy/mean, the
    *_grad ops Paddle's append_backward wrote, sgd) run one step in kernelcore from Paddle's initial values
    gives Paddle's loss and Paddle's updated parameters."""
    _run_paddle(ORACLE / "make_programs.py", tmp_path)
    meta = json.loads((tmp_path / "train_mlp.json").read_text())
    main = kc.load_program(tmp_path / "train_mlp.main.pb")
    missing = sorted({op.type for op in main.global_block().ops if not kc.ir.registry.has_op(op.type)})
    if missing:
        pytest.skip(f"kernelcore has no {missing} yet (gradient ops)")
    ref = np.load(tmp_path / "train_mlp.npz")
    scope = kc.Scope()
    for n in paddle_files.persistable_names(main):
        if f"init/{n}" in ref:
            scope.set(n, ref[f"init/{n}"])
    feeds = {n: ref[n] for n in meta.get("feed_names", ["x", "label"])}
    loss, = kc.Executor(kc.CPUPlace()).run(main, feed=feeds, fetch_list=[meta.get("loss_name", "mean_0.tmp_0")],
                                          scope=scope, training=True)
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-5)
    for n in paddle_files.persistable_names(main):
        if f"after/{n}" in ref:
            np.testing.assert_allclose(scope.get(n), ref[f"after/{n}"], rtol=1e-5, atol=1e-6, err_msg=n)


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adam"])
def test_paddle_trains_a_program_kernelcore_built(tmp_path, opt):
    """kernelcore's layers + append_backward + optimizer write a training program; Paddle runs it for three
    steps from the same initial values and gets kernelcore's losses and final parameters."""
    if not PADDLE3.exists():
        pytest.skip(f"no Paddle 3.3.1 oracle at {PADDLE3.parent.parent}: run ./dev test")
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, 12])
        label = L.data("label", [-1, 1], "int64")
        emb_ids = L.data("ids", [-1, 2], "int64")
        e = kc.op.reshape2(L.embedding(emb_ids, [9, 3]), shape=[-1, 6])
        h = L.fc(kc.op.concat([x, e], axis=1), 16, act="tanh")
        h = L.fc(h, 8, act="relu")
        logits = L.fc(h, 5)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        optimizer = {"sgd": kc.optimizer.SGD(0.2), "momentum": kc.optimizer.Momentum(0.1, 0.9, use_nesterov=True),
                     "adam": kc.optimizer.Adam(0.05, beta1=0.8, beta2=0.95, epsilon=1e-6)}[opt]
        optimizer.minimize(loss, startup)
    exe = kc.Executor(kc.CPUPlace())
    exe.seed(3)
    scope = kc.Scope()
    exe.run(startup, scope=scope)
    names = paddle_files.persistable_names(main)
    state = {f"init/{n}": np.array(scope.get(n)) for n in names}
    rng = np.random.default_rng(5)
    losses = []
    for k in range(3):
        feed = {"x": rng.standard_normal((6, 12)).astype(np.float32), "label": rng.integers(0, 5, (6, 1)),
                "ids": rng.integers(0, 9, (6, 2))}
        state.update({f"feed{k}/{n}": v for n, v in feed.items()})
        losses.append(exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)[0])
    state["fetch"] = np.array([loss.name])
    (tmp_path / "main.pb").write_bytes(main.to_bytes())
    np.savez(tmp_path / "state.npz", **state)
    _run_paddle(ORACLE / "run_kc_training.py", tmp_path / "main.pb", tmp_path / "state.npz", tmp_path / "out.npz")
    got = np.load(tmp_path / "out.npz")
    for k in range(3):
        np.testing.assert_allclose(losses[k], got[f"step{k}/{loss.name}"], rtol=1e-5, err_msg=f"loss, step {k}")
    for n in names:
        np.testing.assert_allclose(scope.get(n), got[f"after/{n}"], rtol=2e-5, atol=1e-6, err_msg=n)
