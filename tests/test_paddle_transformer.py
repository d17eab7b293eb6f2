"""Transformer and BERT programs that Paddle 2.6.2 wrote run in kernelcore and give Paddle's outputs; one training
step (Adam, AdamW) of a small Transformer classifier and one (Adam) of the BERT-style encoder with a classifier give
Paddle's loss and updated parameters.

A session fixture makes Paddle regenerate the programs (tests/paddle_oracle/make_transformer_models.py, a few
seconds) into a temporary directory; without the `.venv-paddle2` venv these tests skip and say so.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc

pytestmark = pytest.mark.paddle

ROOT = Path(__file__).resolve().parent.parent
PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"
SCRIPT = ROOT / "tests" / "paddle_oracle" / "make_transformer_models.py"
INFERENCE = ["transformer_encoder", "bert_encoder", "transformer_decoder", "tensor_funcs"]
TRAINING = ["train_transformer_adam", "train_transformer_adamw", "train_bert_adam"]


@pytest.fixture(scope="session")
def tf_models(tmp_path_factory) -> Path:
    if not PADDLE2.exists():
        pytest.skip(f"no Paddle 2.6.2 oracle at {PADDLE2.parent.parent}: run ./dev test, or "
                    f"bash tests/paddle_oracle/setup_env.sh .venv-paddle2 2.6.2")
    out = tmp_path_factory.mktemp("paddle_transformer")
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    r = subprocess.run([str(PADDLE2), str(SCRIPT), str(out)], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"Paddle failed writing the transformer programs:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return out


@pytest.mark.parametrize("case", INFERENCE)
def test_paddle_transformer_inference_matches(tf_models, case):
    meta = json.loads((tf_models / f"{case}.json").read_text())
    ref = np.load(tf_models / f"{case}.npz")
    prog, scope, feeds, fetches = kc.load_inference_model(tf_models / case)
    assert feeds == meta["feed_names"]
    assert [op.type for op in prog.global_block().ops] == meta["op_types"]
    outs = kc.Executor(kc.CPUPlace()).run(prog, feed={n: ref[n] for n in feeds}, scope=scope)
    assert len(outs) == len(fetches)
    for i, (got, name) in enumerate(zip(outs, fetches)):
        want = ref[f"fetch_{i}"]
        got = np.asarray(got)
        assert got.shape == want.shape, f"{name}: shape {got.shape}, Paddle {want.shape}"
        assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, Paddle {want.dtype}"
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"fetch {i} ({name})")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"fetch {i} ({name})")


def _load_train(tf_models, case):
    main = kc.Program.from_bytes((tf_models / f"{case}.main.pb").read_bytes())
    ref = np.load(tf_models / f"{case}.npz")
    meta = json.loads((tf_models / f"{case}.json").read_text())
    scope = kc.Scope()
    for k in ref.files:
        if k.startswith("init/"):
            scope.set(k[5:], ref[k].copy())
    return main, ref, meta, scope


@pytest.mark.parametrize("case", TRAINING)
def test_paddle_transformer_training_step_matches(tf_models, case):
    main, ref, meta, scope = _load_train(tf_models, case)
    feed = {n: ref[n] for n in meta["feed_names"]}
    loss, = kc.Executor().run(main, feed=feed, fetch_list=[meta["loss_name"]], scope=scope, training=True)
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-4)
    # The key projections' biases have a gradient of exactly 0 in exact arithmetic (adding q.b to every logit of a
    # row leaves the softmax unchanged); what both frameworks compute is rounding noise (~1e-10), which Adam scales
    # to steps of about lr with arbitrary signs. Those parameters are compared through their moments only.
    noise = {p for p in meta["parameters"] if np.abs(ref[f"after/{p}_moment1_0"]).max() < 1e-7}
    assert len(noise) <= 2, f"too many parameters with a vanishing gradient: {sorted(noise)}"
    checked = 0
    for k in ref.files:
        if k.startswith("after/") and k[6:] not in noise:
            np.testing.assert_allclose(scope.get(k[6:]), ref[k], rtol=1e-4, atol=1e-6, err_msg=k)
            checked += 1
    assert checked >= 4 * (len(meta["parameters"]) - len(noise))  # each parameter, its two moments, a beta pow
    # the step really moved the parameters (so matching `after` is not matching `init`)
    moved = [p for p in meta["parameters"] if not np.allclose(ref[f"init/{p}"], ref[f"after/{p}"])]
    assert len(moved) == len(meta["parameters"])


def _forward_only(prog):
    """Paddle's training program cut after its loss op (op_role 256): the forward ops only."""
    block = prog.global_block()
    ends = [i for i, op in enumerate(block.ops) if op.attr("op_role") == 256]
    assert ends, "no loss op (op_role 256) in the training program"
    while len(block.ops) > ends[-1] + 1:
        block.remove_op(len(block.ops) - 1)
    return prog


@pytest.mark.parametrize("own_backward", [False, True], ids=["paddles_grad_ops", "kernelcore_append_backward"])
def test_paddle_transformer_gradients_match(tf_models, own_backward):
    """The parameters' gradients of one step equal Paddle's: with Paddle's own grad ops run here, and with the
    grad ops kernelcore's append_backward writes for Paddle's forward program."""
    main, ref, meta, scope = _load_train(tf_models, "train_transformer_adam")
    params = meta["parameters"]
    grad_names = {p: p + "@GRAD" for p in params}
    if own_backward:
        _forward_only(main)
        pairs = kc.append_backward(main.global_block().var(meta["loss_name"]))
        # Paddle's program still declares `<param>@GRAD`, so kernelcore picks fresh names (`@GRAD_0`)
        grad_names = {p.name: g.name for p, g in pairs}
        assert sorted(grad_names) == params
        written = {op.type for op in main.global_block().ops}
        assert {"layer_norm_grad", "gelu_grad", "matmul_v2_grad", "softmax_grad"} <= written
    feed = {n: ref[n] for n in meta["feed_names"]}
    got = kc.Executor().run(main, feed=feed, fetch_list=[grad_names[p] for p in params], scope=scope, training=True)
    # atol from the largest gradient: the key projections' biases get rounding noise only (see above)
    scale = max(np.abs(ref[f"grad/{p}"]).max() for p in params)
    for p, g in zip(params, got):
        np.testing.assert_allclose(g, ref[f"grad/{p}"], rtol=1e-4, atol=1e-6 * scale, err_msg=p)


@pytest.mark.parametrize("own_backward", [False, True], ids=["paddles_grad_ops", "kernelcore_append_backward"])
def test_paddle_tensor_function_gradients_match(tf_models, own_backward):
    """Paddle's backward of a weighted sum of ~30 tensor functions (grad_funcs): the gradients of both inputs equal
    Paddle's, running Paddle's grad ops here and running the ones kernelcore's append_backward writes."""
    main = kc.Program.from_bytes((tf_models / "grad_funcs.main.pb").read_bytes())
    ref = np.load(tf_models / "grad_funcs.npz")
    meta = json.loads((tf_models / "grad_funcs.json").read_text())
    if own_backward:
        _forward_only(main)
        block = main.global_block()
        for v in [v.name for v in block.vars if "@GRAD" in v.name]:  # what Paddle's backward had declared
            block.remove_var(v)
        assert not block.var("x").stop_gradient and not block.var("y").stop_gradient
        kc.append_backward(block.var(meta["loss_name"]), parameter_list=[])
    feed = {n: ref[n] for n in meta["feed_names"]}
    loss, gx, gy = kc.Executor().run(main, feed=feed, fetch_list=[meta["loss_name"], "x@GRAD", "y@GRAD"],
                                     scope=kc.Scope())
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-5)
    np.testing.assert_allclose(gx, ref["grad/x"], rtol=1e-4, atol=1e-5, err_msg="x@GRAD")
    np.testing.assert_allclose(gy, ref["grad/y"], rtol=1e-4, atol=1e-5, err_msg="y@GRAD")


def test_paddle_transformer_programs_use_only_registered_ops(tf_models):
    for f in sorted(tf_models.glob("*.json")):
        meta = json.loads(f.read_text())
        missing = sorted({t for t in meta["op_types"] if not kc.ir.registry.has_op(t)})
        assert not missing, f"{f.name}: no kernelcore op for {missing}"


def test_bench_transformer_models_quick_runs():
    """bench/transformer_models.py --quick runs to the end (no timing asserted; figures in docs/benchmarks.md)."""
    if not PADDLE2.exists():
        pytest.skip("no Paddle 2.6.2 oracle")
    import sys
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "transformer_models.py"), "--quick", "--seq", "16"],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert "ratio kernelcore / Paddle (best):" in r.stdout
