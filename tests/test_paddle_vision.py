"""paddle.vision models and single-layer paddle.nn programs, written by Paddle, run in kernelcore with Paddle's
outputs.

A session fixture runs tests/paddle_oracle/make_vision_models.py with Paddle 3.3.1 (legacy IR) into a temporary
directory, then with Paddle 2.6.2 for the cases 3.3.1's legacy mode cannot build (softplus); without the Paddle
venvs these tests skip and say so. Each inference case is loaded with its .pdiparams and run; its outputs must
match Paddle's to rtol 1e-4, with an absolute floor of 1e-4 * max|Paddle's output| (float32 sums taken in another
order differ near zero). Training-mode batch norms also match Paddle's updated running statistics.
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
GENERATOR = ROOT / "tests" / "paddle_oracle" / "make_vision_models.py"
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"
PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"

MODELS = ["lenet", "resnet18", "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
          "squeezenet1_0", "shufflenet_v2_x0_25", "shufflenet_v2_swish", "densenet121",
          "alexnet", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn", "googlenet"]
LAYERS = [
    "conv1d", "conv2d", "conv2d_groups_dilation", "conv2d_same", "conv2d_valid", "conv2d_asym_pad", "conv2d_nhwc",
    "conv2d_1x1", "conv2d_groups32", "conv2d_1x7", "conv2d_7x1", "depthwise_conv2d", "depthwise_conv2d_k5", "conv3d",
    "conv2d_transpose",
    "conv2d_transpose_groups", "conv1d_transpose", "conv3d_transpose",
    "maxpool2d", "maxpool2d_ceil", "avgpool2d_exclusive", "avgpool2d_inclusive", "avgpool2d_ceil", "avgpool2d_same",
    "maxpool2d_valid", "maxpool2d_asym", "adaptive_avgpool2d", "adaptive_maxpool2d", "global_avgpool2d",
    "maxpool1d", "avgpool1d", "maxpool3d", "avgpool3d", "adaptive_avgpool3d",
    "batchnorm2d", "batchnorm1d", "groupnorm", "instancenorm2d", "layernorm",
    "relu6", "elu", "leaky_relu", "hardswish", "hardsigmoid", "swish", "silu", "softplus", "mish", "prelu",
    "prelu_channel", "dropout_upscale", "dropout_downscale",
    "nearest", "nearest_size", "bilinear", "bilinear_align_corners", "bilinear_align_mode1", "bilinear_down",
    "bicubic", "bicubic_align_corners", "pad2d_constant", "pad2d_reflect", "pad2d_replicate", "pad2d_circular",
    "flatten"]
TRAIN_LAYERS = ["batchnorm2d_train", "batchnorm1d_train"]
TRAIN_STEPS = ["train_cnn"]


def _run(python, *args):
    env = dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    r = subprocess.run([str(python), str(GENERATOR), *map(str, args)], capture_output=True, text=True, env=env,
                       timeout=900)
    if r.returncode != 0:
        pytest.fail(f"{python} {GENERATOR.name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


@pytest.fixture(scope="session")
def zoo(tmp_path_factory) -> Path:
    if not PADDLE3.exists():
        pytest.skip(f"no Paddle 3.3.1 oracle at {PADDLE3.parent.parent}: run ./dev test, or "
                    "bash tests/paddle_oracle/setup_env.sh .venv-paddle 3.3.1")
    out = tmp_path_factory.mktemp("paddle_vision")
    _run(PADDLE3, out)
    if PADDLE2.exists():
        _run(PADDLE2, out, "--failed")
    return out


def _case(zoo, name):
    meta_path = zoo / f"{name}.json"
    if not meta_path.exists():
        failed = {}
        for m in zoo.glob("manifest-*.json"):
            failed.update(json.loads(m.read_text())["failed"])
        if name in failed and not PADDLE2.exists():
            pytest.skip(f"Paddle 3.3.1 could not build {name} and there is no Paddle 2.6.2 venv: {failed[name][:200]}")
        pytest.fail(f"Paddle wrote no {name} case: {failed.get(name, 'not attempted')[:1000]}")
    return json.loads(meta_path.read_text()), np.load(zoo / f"{name}.npz")


def assert_matches(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, Paddle's {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, Paddle's {want.dtype}"
    floor = 1e-4 * float(np.abs(want).max()) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=max(floor, 1e-7), err_msg=what)


def run_inference_case(zoo, name):
    meta, ref = _case(zoo, name)
    prog, scope, feeds, fetches = kc.load_inference_model(zoo / name)
    assert feeds == meta["feed_names"] and fetches == meta["fetch_names"]
    assert [op.type for op in prog.global_block().ops] == meta["op_types"]
    feed = {n: ref[n] for n in feeds}
    outs = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, scope=scope)
    assert len(outs) == len(fetches)
    exact = None
    for i, got in enumerate(outs):
        want = ref[f"fetch_{i}"]
        try:
            assert_matches(got, want, f"{name}: fetch {i} ({fetches[i]})")
        except AssertionError:
            # Paddle's float32 is an oracle with rounding of its own, which depends on the CPU its kernels pick
            # (ShuffleNetV2 x0.25 on an Intel Xeon: 1.7e-4 of max|output| from the float64 result, kernelcore's
            # 7.7e-5). Past the tolerance, the same program run in float64 arbitrates: kernelcore must be within
            # the tolerance of it and no further from it than Paddle is.
            exact = exact or float64_outputs(prog, scope, feed)
            assert_matches(got.astype(np.float64), exact[i], f"{name}: fetch {i} ({fetches[i]}) against float64")
            ours, paddles = (float(np.abs(v - exact[i]).max()) for v in (got, want))
            assert ours <= paddles, (f"{name}: fetch {i} is {ours:.2e} from the float64 result, Paddle's "
                                     f"{paddles:.2e}")


def float64_outputs(prog, scope, feed):
    """The program's fetches with every float32 parameter and feed widened to float64 (kernelcore's kernels follow
    their inputs' dtype)."""
    wide = kc.Scope()
    for n in scope.local_var_names():
        v = scope.find_var(n).value
        if v is not None:
            wide.set(n, v.astype(np.float64) if getattr(v, "dtype", None) == np.float32 else v)
    feed = {n: a.astype(np.float64) if a.dtype == np.float32 else a for n, a in feed.items()}
    outs = kc.Executor(kc.CPUPlace()).run(prog, feed=feed, scope=wide)
    assert all(o.dtype == np.float64 for o in outs), "the float64 run did not stay in float64"
    return outs


@pytest.mark.parametrize("name", MODELS)
def test_vision_model_matches_paddle(zoo, name):
    run_inference_case(zoo, name)


@pytest.mark.parametrize("name", LAYERS)
def test_layer_program_matches_paddle(zoo, name):
    run_inference_case(zoo, name)


@pytest.mark.parametrize("name", TRAIN_LAYERS)
def test_training_batch_norm_matches_paddle(zoo, name):
    """A training-mode batch_norm (is_test=false) normalises with the batch's statistics and updates the running
    Mean/Variance as Paddle does (biased variance, momentum from the program); run with training=True."""
    meta, ref = _case(zoo, name)
    prog = kc.load_program(zoo / f"{name}.main.pb")
    assert [op.type for op in prog.global_block().ops] == meta["op_types"]
    scope = kc.Scope()
    inits = [k for k in ref.files if k.startswith("init/")]
    assert inits, "the case holds no initial persistables"
    for k in inits:
        scope.set(k[len("init/"):], ref[k])
    (y,) = kc.Executor(kc.CPUPlace()).run(prog, feed={"x": ref["x"]}, fetch_list=meta["fetch_names"], scope=scope,
                                          training=True)
    assert_matches(y, ref["fetch_0"], f"{name}: Y")
    changed = 0
    for k in ref.files:
        if k.startswith("after/"):
            var = k[len("after/"):]
            got = kc.runtime.place.to_host(scope.find_var(var).value)
            assert_matches(got, ref[k], f"{name}: {var} after the step")
            changed += not np.array_equal(ref[k], ref[f"init/{var}"])
    assert changed >= 2, "Paddle's step changed neither running statistic: the case tests nothing"


def test_every_case_was_built(zoo):
    """The generator built each case this module tests (a case Paddle failed to build is named here)."""
    ok, failed = set(), {}
    for m in zoo.glob("manifest-*.json"):
        d = json.loads(m.read_text())
        ok |= set(d["ok"])
        failed.update(d["failed"])
    missing = [n for n in MODELS + LAYERS + TRAIN_LAYERS + TRAIN_STEPS if n not in ok]
    if missing and not PADDLE2.exists():
        missing = [n for n in missing if n not in failed]  # 2.6.2 would have built these
    assert not missing, {n: failed.get(n, "not attempted")[:300] for n in missing}


def test_cnn_training_step_matches_paddle(zoo):
    """Paddle's own training program for a small CNN (conv2d, batch_norm, relu, pool2d, depthwise_conv2d, adaptive
    average pooling, flatten, linear, cross entropy; their *_grad ops; momentum), run here for one step from
    Paddle's initial parameters: the loss and every updated persistable (parameters, velocities, running
    statistics) match Paddle's to 1e-4."""
    meta, ref = _case(zoo, "train_cnn")
    prog = kc.load_program(zoo / "train_cnn.main.pb")
    types = set(meta["op_types"])
    assert {"conv2d_grad", "batch_norm_grad", "pool2d_grad", "depthwise_conv2d_grad", "momentum"} <= types
    scope = kc.Scope()
    for k in ref.files:
        if k.startswith("init/"):
            scope.set(k[len("init/"):], ref[k])
    (loss,) = kc.Executor(kc.CPUPlace()).run(prog, feed={"x": ref["x"], "label": ref["label"]},
                                             fetch_list=[meta["loss_name"]], scope=scope, training=True)
    np.testing.assert_allclose(loss, ref["loss"], rtol=1e-4, atol=1e-6)
    moved = 0
    for k in ref.files:
        if k.startswith("after/"):
            name = k[len("after/"):]
            got, want = kc.runtime.place.to_host(scope.find_var(name).value), ref[k]
            assert got.shape == want.shape and got.dtype == want.dtype, name
            # atol 1e-6: the first conv's bias feeds a batch norm, so its exact gradient is 0 and both Paddle and
            # kernelcore compute float32 rounding noise (~1e-9) for it and its velocity
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=max(1e-4 * float(np.abs(want).max()), 1e-6),
                                       err_msg=f"train_cnn: {name} after one step")
            moved += not np.allclose(ref[k], ref[f"init/{name}"])
    assert moved >= len(meta["parameters"]), "Paddle's step left parameters unchanged: the case tests nothing"
