"""The fast paths apart from the reference kernels (kernelcore/runtime/fast_paths.py): a fast variant is chosen when
an op is prepared, its gate sends what it cannot take to the reference, and one switch turns every fast path off
(C kernels and ops in parts alike). Programs Paddle writes (vision models, a training step, a BERT-style encoder,
LSTMs) give the same outputs with fast paths on and off.

The Paddle programs come from tests/paddle_oracle's generators, as tests/test_paddle_vision.py and friends make
them; without the Paddle venvs those tests skip and say so.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore import native
from kernelcore.runtime import cpu_parts, fast_paths

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "paddle_oracle"
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"
PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"
HAVE = native.library() is not None
needs_library = pytest.mark.skipif(not HAVE, reason=f"the C kernels are not loaded: {native.native_state()}")


class _Ctx:
    xp = np


def _reference(ctx, ins, attrs):
    return ("reference",)


def test_a_variant_is_chosen_for_float32_on_the_cpu_only_while_the_switch_is_on(monkeypatch):
    monkeypatch.setattr(fast_paths, "_FAST", {})
    fast_paths.fast_kernel("an_op", lambda xp, ins, attrs: ins[0] > 0)(lambda ctx, ins, attrs: ("fast",))
    kernel = fast_paths.choose("an_op", "cpu", "float32", _reference)
    assert kernel.__name__ == "_reference" and kernel.reference is _reference
    assert kernel(_Ctx, [1], {}) == ("fast",)
    assert kernel(_Ctx, [-1], {}) == ("reference",)  # the gate says no: the reference runs
    assert fast_paths.choose("an_op", "cpu", None, _reference) is not _reference  # undeclared: the gate decides
    assert fast_paths.choose("an_op", "cpu", "float64", _reference) is _reference
    assert fast_paths.choose("an_op", "gpu", "float32", _reference) is _reference
    assert fast_paths.choose("another_op", "cpu", "float32", _reference) is _reference
    with fast_paths.switched_off():
        assert not fast_paths.enabled()
        assert fast_paths.choose("an_op", "cpu", "float32", _reference) is _reference
    assert fast_paths.enabled() or os.environ.get(fast_paths.ENV, "").lower() in fast_paths.OFF_VALUES


def test_a_fast_form_wraps_the_specialised_form_only_while_the_switch_is_on(monkeypatch):
    monkeypatch.setattr(fast_paths, "_FAST_FORMS", {})
    fast_paths.fast_form("an_op")(lambda form: ("fast", form))
    assert fast_paths.choose_form("an_op", "cpu", np.add) == ("fast", np.add)
    assert fast_paths.choose_form("an_op", "cpu", None) is None  # no specialised form: the kernel runs
    assert fast_paths.choose_form("an_op", "gpu", np.add) is np.add
    with fast_paths.switched_off():
        assert fast_paths.choose_form("an_op", "cpu", np.add) is np.add


@needs_library
def test_a_large_float32_add_is_prepared_in_c_and_plain_with_the_switch_off():
    from kernelcore.native import elementwise
    prog, exe = kc.Program(), kc.Executor()
    block = prog.global_block()
    block.create_var("x", [64, 1024], dtype="float32")
    block.create_var("y", [1024], dtype="float32")
    block.append_op("elementwise_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["z"]}, {"axis": -1})
    assert exe.prepare(prog).ops[0].fast is elementwise.add_in_c
    with fast_paths.switched_off():
        assert exe.prepare(prog).ops[0].fast is np.add


def test_every_variant_stands_for_an_op_with_a_reference_kernel():
    for op_type, place, dtype in fast_paths.registered():
        assert kc.get_op_def(op_type).find_kernel(place, dtype) is not None, op_type


def test_the_native_floor_names_the_empty_grad_variable_as_backward_does():
    from kernelcore.native import norm
    from kernelcore.transforms.grad_rules import EMPTY_VAR
    assert norm.EMPTY_VAR == EMPTY_VAR


def _relu_program():
    prog = kc.Program()
    block = prog.global_block()
    block.create_var("x", [4, 8], dtype="float32")
    block.append_op("relu", {"X": ["x"]}, {"Out": ["y"]})
    return prog


@needs_library
def test_the_executor_prepares_again_when_the_switch_moves():
    prog, exe = _relu_program(), kc.Executor()
    assert exe.prepare(prog).ops[0].kernel.fast.op_type == "relu"
    with fast_paths.switched_off():
        off = exe.prepare(prog).ops[0].kernel
        assert not hasattr(off, "fast")
        x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
        (y,) = exe.run(prog, feed={"x": x}, fetch_list=["y"], scope=kc.Scope())
        np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert exe.prepare(prog).ops[0].kernel is not off


def test_switched_off_no_op_splits_and_no_c_gate_says_yes():
    big = np.zeros((64, 64), np.float32)
    with fast_paths.switched_off():
        assert cpu_parts.cpu_parts(np, 10 ** 12) == 1
        assert not native.ready(np, big) and not native.gemm_ready(np, big) and not native.enabled(np)
        with cpu_parts.split_run(np, True):
            assert cpu_parts.cpu_parts(np, 10 ** 12) == 1


# -- the model zoo, fast paths on and off -------------------------------------------------------------------
VISION = ["resnet18", "mobilenet_v3_small"]


def _generate(python: Path, script: str, out: Path, *args, version: str):
    if not python.exists():
        pytest.skip(f"no Paddle {version} oracle at {python.parent.parent}: run ./dev test, or "
                    f"bash tests/paddle_oracle/setup_env.sh {python.parent.parent.name} {version}")
    env = dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    r = subprocess.run([str(python), str(ORACLE / script), str(out), *args], capture_output=True, text=True,
                       env=env, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"{script} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fast_paths_zoo")
    _generate(PADDLE3, "make_vision_models.py", out, *VISION, "train_cnn", version="3.3.1")
    return out


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fast_paths_bert")
    _generate(PADDLE2, "make_transformer_models.py", out, "bert_encoder", version="2.6.2")
    return out


@pytest.fixture(scope="module")
def rnns(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fast_paths_rnn")
    _generate(PADDLE3, "make_rnn_models.py", out, version="3.3.1")
    return out


class CallCounts:
    """Calls into the C library (every wrapper in kernelcore/native reaches it through `_c`) and ops handed to
    the pool of parts (cpu_parts._workers: only a split op asks for it)."""

    def __init__(self, monkeypatch):
        self.c_calls = self.splits = 0
        real_c, real_workers = native._c, cpu_parts._workers

        def counted_c():
            self.c_calls += 1
            return real_c()

        def counted_workers(n):
            self.splits += 1
            return real_workers(n)
        monkeypatch.setattr(native, "_c", counted_c)
        monkeypatch.setattr(cpu_parts, "_workers", counted_workers)


def _both_ways(run, monkeypatch):
    """run() with fast paths on, then off (each on a freshly loaded program), and what each reached."""
    on_counts = CallCounts(monkeypatch)
    on = run()
    with fast_paths.switched_off():
        off_counts = CallCounts(monkeypatch)
        off = run()
    assert off_counts.c_calls == 0 and off_counts.splits == 0, "a fast path ran with fast paths switched off"
    return on, off, on_counts


def _assert_same(on, off, what):
    assert len(on) == len(off)
    for i, (a, b) in enumerate(zip(on, off)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, what
        floor = 1e-5 * float(np.abs(b).max()) if b.size else 0.0
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=max(floor, 1e-7), err_msg=f"{what}: output {i}")


def _inference(directory: Path, name: str):
    def run():
        prog, scope, feeds, _ = kc.load_inference_model(directory / name)
        ref = np.load(directory / f"{name}.npz")
        return kc.Executor(kc.CPUPlace()).run(prog, feed={n: ref[n] for n in feeds}, scope=scope)
    return run


@needs_library
@pytest.mark.paddle
@pytest.mark.parametrize("name", VISION)
def test_vision_models_give_the_same_outputs_with_fast_paths_off(zoo, name, monkeypatch):
    on, off, counts = _both_ways(_inference(zoo, name), monkeypatch)
    assert counts.c_calls > 0, "the C kernels never ran with fast paths on"
    _assert_same(on, off, name)


@needs_library
@pytest.mark.paddle
def test_a_training_step_gives_the_same_parameters_with_fast_paths_off(zoo, monkeypatch):
    meta = json.loads((zoo / "train_cnn.json").read_text())
    ref = np.load(zoo / "train_cnn.npz")
    names = sorted(k[len("after/"):] for k in ref.files if k.startswith("after/"))

    def run():
        prog, scope = kc.load_program(zoo / "train_cnn.main.pb"), kc.Scope()
        for k in ref.files:
            if k.startswith("init/"):
                scope.set(k[len("init/"):], ref[k])
        (loss,) = kc.Executor(kc.CPUPlace()).run(prog, feed={"x": ref["x"], "label": ref["label"]},
                                                 fetch_list=[meta["loss_name"]], scope=scope, training=True)
        return [loss] + [np.array(scope.find_var(n).value) for n in names]
    on, off, counts = _both_ways(run, monkeypatch)
    assert counts.c_calls > 0
    _assert_same(on, off, "train_cnn")


@needs_library
@pytest.mark.paddle
def test_a_bert_encoder_gives_the_same_outputs_with_fast_paths_off(bert, monkeypatch):
    on, off, counts = _both_ways(_inference(bert, "bert_encoder"), monkeypatch)
    assert counts.c_calls > 0
    _assert_same(on, off, "bert_encoder")


@needs_library
@pytest.mark.paddle
def test_lstms_give_the_same_outputs_with_fast_paths_off(rnns, monkeypatch):
    cases = [c for c in json.loads((rnns / "index.json").read_text())["cases"]
             if c.startswith("lstm") and (rnns / f"{c}.pdmodel").exists()]
    assert cases, "make_rnn_models.py wrote no LSTM inference case"
    for name in cases:
        on, off, counts = _both_ways(_inference(rnns, name), monkeypatch)
        assert counts.c_calls > 0, name
        _assert_same(on, off, name)


# -- the reference kernels reach no fast path themselves ------------------------------------------------------
def _conv_lstm_training_program(rng):
    """A float32 program with every op family whose fast paths once sat inside its reference kernel: a
    convolution, a depthwise one, max pooling, a transposed convolution, a fused LSTM, a matrix product and an
    SGD update, with their gradients (large enough that the work would split over the cores)."""
    from opcases.rnn import random_rnn
    prog, feed = kc.Program(), {}
    with kc.program_guard(prog):
        g = prog.global_block()

        def var(name, value, grad=True):
            g.create_var(name, list(value.shape), "float32", stop_gradient=not grad)
            feed[name] = value.astype(np.float32)
            return g.var(name)
        x = var("x", rng.standard_normal((8, 16, 32, 32)), grad=False)
        w = var("w", rng.standard_normal((32, 16, 3, 3)) * 0.1)
        dw = var("dw", rng.standard_normal((32, 1, 3, 3)) * 0.1)
        tw = var("tw", rng.standard_normal((32, 8, 2, 2)) * 0.1)
        y = kc.op.conv2d(x, w, strides=[1, 1], paddings=[1, 1])
        y = kc.op.depthwise_conv2d(y, dw, strides=[1, 1], paddings=[1, 1], groups=32)
        y = kc.op.pool2d(y, pooling_type="max", ksize=[2, 2], strides=[2, 2])
        y = kc.op.conv2d_transpose(y, tw, None, strides=[2, 2])           # [8, 8, 32, 32]
        seq = kc.op.reshape2(y, shape=[8, 8, 1024])                       # time-major [T=8, B=8, 1024]
        _, pre, weights = random_rnn("LSTM", 1, False, T=8, B=8, I=1024, H=32, seed=7)
        ins = {"Input": [seq.name], "PreState": [var(f"pre{i}", v, grad=False).name for i, v in enumerate(pre)],
               "WeightList": [var(f"rw{i}", v * 0.1).name for i, v in enumerate(weights)]}
        for n in ("out", "h_n", "c_n", "reserve", "dropout_state"):
            g.create_var(n, None, "float32")
        g.append_op("rnn", ins, {"Out": ["out"], "State": ["h_n", "c_n"], "Reserve": ["reserve"],
                                 "DropoutState": ["dropout_state"]},
                    {"mode": "LSTM", "num_layers": 1, "is_bidirec": False, "hidden_size": 32, "input_size": 1024})
        fc = var("fc", rng.standard_normal((32, 10)) * 0.1)
        logits = kc.op.matmul_v2(g.var("out"), fc)
        loss = kc.op.reduce_sum(kc.op.elementwise_mul(logits, logits), reduce_all=True, dim=[])
    kc.append_backward(loss)
    lr = g.create_var("lr", [1], "float32", stop_gradient=True)
    feed["lr"] = np.array([0.01], np.float32)
    for p in ("w", "dw", "tw", "fc"):
        g.append_op("sgd", {"Param": [p], "LearningRate": [lr.name], "Grad": [f"{p}@GRAD"]}, {"ParamOut": [p]})
    return prog, feed, loss.name


@needs_library
def test_the_reference_kernels_call_no_c_kernel_and_split_nothing(monkeypatch):
    """With fast paths on but no variant chosen, every kernel the executor prepares is the reference: a training
    step of convolutions, pooling, an LSTM, a matrix product and SGD then reaches the C library not once and hands
    no op to the pool of parts; with its variants chosen it does both (in a split run on two threads), and the
    updated parameters agree."""
    from threadpoolctl import threadpool_limits
    prog, feed, loss = _conv_lstm_training_program(np.random.default_rng(3))
    fetch = [loss, "w", "dw", "tw", "fc"]

    def step():
        return kc.Executor(kc.CPUPlace()).run(prog, feed=dict(feed), fetch_list=fetch, scope=kc.Scope(),
                                              training=True)
    monkeypatch.setattr(cpu_parts, "MIN_SPLIT_WORK", 0)
    with threadpool_limits(2):
        fast_counts = CallCounts(monkeypatch)
        fast = step()
        with monkeypatch.context() as m:
            m.setattr(fast_paths, "_FAST", {})
            reference_counts = CallCounts(monkeypatch)
            reference = step()
    assert reference_counts.c_calls == 0 and reference_counts.splits == 0, \
        (reference_counts.c_calls, reference_counts.splits)
    assert fast_counts.c_calls > 0
    if cpu_parts.split_run_parts() and cpu_parts.split_run_parts() > 1:
        assert fast_counts.splits > 0
    _assert_same(fast, reference, "conv + LSTM training step")


@needs_library
def test_the_moved_fast_paths_are_chosen_when_a_program_is_prepared():
    prog, _, _ = _conv_lstm_training_program(np.random.default_rng(3))
    prepared = kc.Executor(kc.CPUPlace()).prepare(prog)
    chosen = {op.type for op in prepared.ops if hasattr(op.kernel, "fast")}
    assert {"conv2d", "depthwise_conv2d", "pool2d", "conv2d_transpose", "rnn", "matmul_v2", "sgd", "conv2d_grad",
            "depthwise_conv2d_grad", "pool2d_grad", "conv2d_transpose_grad", "rnn_grad", "matmul_v2_grad"} <= chosen
    with fast_paths.switched_off():
        prepared = kc.Executor(kc.CPUPlace()).prepare(prog)
        assert not any(hasattr(op.kernel, "fast") for op in prepared.ops)
