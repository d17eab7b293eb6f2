"""Parity with PaddlePaddle itself: programs and parameters Paddle wrote run in kernelcore and
give Paddle's outputs, and files kernelcore writes are read (and run) by Paddle.

Paddle lives in its own virtualenvs (`.venv-paddle`, 3.3.1; `.venv-paddle2`, 2.6.2), which
`./dev test` creates; without them these tests skip and say so. With them, a session fixture
makes Paddle regenerate its programs and reference outputs into a temporary directory
(tests/paddle_oracle/make_programs.py, ~2 s). A missing op kernel makes a test fail, not skip.
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
PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"
INFERENCE_CASES = ["mlp", "mlp_sigmoid_mean"]


def _paddle_env():
    return dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="1", PYTHONWARNINGS="ignore")


def run_paddle(python: Path, *args, timeout=300):
    r = subprocess.run([str(python), *map(str, args)], capture_output=True, text=True, env=_paddle_env(),
                       timeout=timeout)
    if r.returncode != 0:
        pytest.fail(f"Paddle ({python}) failed running {' '.join(map(str, args))}:\n{r.stdout[-3000:]}\n"
                    f"{r.stderr[-3000:]}")
    return r


def _need(python: Path, version: str):
    if not python.exists():
        pytest.skip(f"no Paddle {version} oracle at {python.parent.parent}: run ./dev test, or "
                    f"bash tests/paddle_oracle/setup_env.sh {python.parent.parent.name} {version}")


@pytest.fixture(scope="session")
def p3(tmp_path_factory) -> Path:
    """Paddle 3.3.1 (legacy IR) programs + references, freshly written (make_programs.py)."""
    _need(PADDLE3, "3.3.1")
    out = tmp_path_factory.mktemp("paddle_p3")
    run_paddle(PADDLE3, ORACLE / "make_programs.py", out)
    return out


@pytest.fixture(scope="session")
def p2(tmp_path_factory) -> Path:
    """Paddle 2.6.2 control-flow programs (make_control_flow.py)."""
    _need(PADDLE2, "2.6.2")
    out = tmp_path_factory.mktemp("paddle_p2")
    run_paddle(PADDLE2, ORACLE / "make_control_flow.py", out)
    return out


# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", INFERENCE_CASES)
def test_paddle_inference_model_runs_in_kernelcore(p3, case):
    meta = json.loads((p3 / f"{case}.json").read_text())
    ref = np.load(p3 / f"{case}.npz")
    prog, scope, feeds, fetches = kc.load_inference_model(p3 / case)
    assert feeds == meta["feed_names"]
    assert fetches == meta["fetch_names"]
    assert [op.type for op in prog.global_block().ops] == meta["op_types"]
    assert paddle_files.persistable_names(prog) == sorted(meta["persistables"])
    for name, info in meta["persistables"].items():
        assert list(scope.get(name).shape) == info["shape"], name

    outs = kc.Executor(kc.CPUPlace()).run(prog, feed={n: ref[n] for n in feeds}, scope=scope)
    assert len(outs) == len(fetches)
    for i, (name, got) in enumerate(zip(fetches, outs)):
        want = ref[f"fetch_{i}"]
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{case}: fetch {i} ({name})")


@pytest.mark.parametrize("case", INFERENCE_CASES)
def test_paddle_files_reserialize_byte_for_byte(p3, case):
    prog = kc.load_program(p3 / f"{case}.pdmodel")
    assert prog.to_bytes() == (p3 / f"{case}.pdmodel").read_bytes()
    params = kc.load_params(p3 / f"{case}.pdiparams", prog)
    assert paddle_files.params_to_bytes(params) == (p3 / f"{case}.pdiparams").read_bytes()


def test_committed_example_is_what_paddle_writes(p3):
    """examples/programs/mlp.* were copied from make_programs.py's output; the parameters are
    seeded, so they must match a fresh run exactly (the .pdmodel embeds absolute paths)."""
    examples = ROOT / "examples" / "programs"
    assert (examples / "mlp.pdiparams").read_bytes() == (p3 / "mlp.pdiparams").read_bytes()
    fresh, committed = kc.load_program(p3 / "mlp.pdmodel"), kc.load_program(examples / "mlp.pdmodel")
    assert str(fresh) == str(committed)


def test_paddle_training_programs_load(p3):
    meta = json.loads((p3 / "train_mlp.json").read_text())
    main = kc.load_program(p3 / "train_mlp.main.pb")
    startup = kc.load_program(p3 / "train_mlp.startup.pb")
    assert [op.type for op in main.global_block().ops] == meta["op_types"]
    assert [op.type for op in startup.global_block().ops] == meta["startup_op_types"]
    assert paddle_files.persistable_names(main) == sorted(meta["persistables"])


def test_paddle_control_flow_programs_load(p2):
    files = sorted(p2.glob("*.pb"))
    assert files, f"make_control_flow.py wrote no .pb files into {p2}"
    for pb_file in files:
        meta = json.loads(pb_file.with_suffix(".json").read_text())
        prog = kc.load_program(pb_file)
        assert [(b.idx, b.parent_idx, [op.type for op in b.ops]) for b in prog.blocks] == \
            [(b["idx"], b["parent_idx"], b["op_types"]) for b in meta["blocks"]], pb_file.name
        assert prog.to_bytes() == pb_file.read_bytes(), pb_file.name
        str(prog)  # the text form of nested blocks


# ---------------------------------------------------------------------------
def test_paddle_runs_a_model_kernelcore_saved(p3, tmp_path):
    """load_inference_model -> save_inference_model in kernelcore; Paddle loads the copy and
    reproduces its own reference outputs."""
    prog, scope, feeds, _ = kc.load_inference_model(p3 / "mlp_sigmoid_mean")
    kc.save_inference_model(tmp_path / "copy", prog, scope)
    ref = np.load(p3 / "mlp_sigmoid_mean.npz")
    np.savez(tmp_path / "feeds.npz", **{n: ref[n] for n in feeds})
    run_paddle(PADDLE3, ORACLE / "read_kc_files.py", "infer", tmp_path / "copy", tmp_path / "feeds.npz",
               tmp_path / "out.npz")
    got = np.load(tmp_path / "out.npz")
    assert list(got["feed_names"]) == feeds
    for i in range(3):
        np.testing.assert_array_equal(got[f"fetch_{i}"], ref[f"fetch_{i}"])


def test_paddle_runs_a_program_kernelcore_built(tmp_path):
    """A program built with kernelcore's API, saved with feed/fetch ops added: Paddle runs it."""
    _need(PADDLE3, "3.3.1")
    prog = kc.Program()
    with kc.program_guard(prog):
        block = prog.global_block()
        x = block.create_var("x", shape=[-1, 4], dtype="float32")
        w = block.create_parameter("w", shape=[4, 3])
        b = block.create_parameter("b", shape=[3])
        y = kc.op.softmax(kc.op.elementwise_add(kc.op.relu(kc.op.mul(x, w)), b))
    rng = np.random.default_rng(7)
    scope = kc.Scope()
    scope.set("w", rng.standard_normal((4, 3)).astype(np.float32))
    scope.set("b", rng.standard_normal(3).astype(np.float32))
    xv = rng.standard_normal((5, 4)).astype(np.float32)
    want, = kc.Executor(kc.CPUPlace()).run(prog, feed={"x": xv}, fetch_list=[y], scope=scope)
    kc.save_inference_model(tmp_path / "built", prog, scope, feed_names=["x"], fetch_names=[y.name])
    np.savez(tmp_path / "feeds.npz", x=xv)
    run_paddle(PADDLE3, ORACLE / "read_kc_files.py", "infer", tmp_path / "built", tmp_path / "feeds.npz",
               tmp_path / "out.npz")
    got = np.load(tmp_path / "out.npz")
    assert list(got["fetch_names"]) == [y.name]
    np.testing.assert_allclose(got["fetch_0"], want, rtol=1e-5, atol=1e-6)


def test_paddle_reads_parameters_kernelcore_saved(tmp_path):
    """save_params with many dtypes, 0-d and empty tensors; Paddle's load_combine reads them back."""
    _need(PADDLE3, "3.3.1")
    rng = np.random.default_rng(0)
    arrays = {
        "a_f32": rng.standard_normal((3, 4)).astype(np.float32), "b_f64": np.linspace(-1, 1, 5),
        "c_i64": np.arange(6, dtype=np.int64).reshape(2, 3) - 3, "d_i32": np.array([[1, -2], [3, 4]], np.int32),
        "e_f16": np.array([0.5, -1.25], np.float16), "f_bool": np.array([True, False, True]),
        "g_scalar": np.array(3.5, np.float32), "h_u8": np.array([0, 255], np.uint8),
        "i_i8": np.array([-128, 127], np.int8), "j_i16": np.array([-3, 7], np.int16),
        "k_c64": np.array([1 + 2j], np.complex64), "l_empty": np.zeros((0, 3), np.float32),
        "m_scalar_i64": np.array(-7, np.int64),
    }
    kc.save_params(tmp_path / "p.pdiparams", arrays)
    spec = [[n, str(arrays[n].dtype), list(arrays[n].shape)] for n in sorted(arrays)]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    run_paddle(PADDLE3, ORACLE / "read_kc_files.py", "params", tmp_path / "p.pdiparams", tmp_path / "spec.json",
               tmp_path / "out.npz")
    got = np.load(tmp_path / "out.npz")
    for n, want in arrays.items():
        assert got[n].dtype == want.dtype and got[n].shape == want.shape, n
        np.testing.assert_array_equal(got[n], want)
