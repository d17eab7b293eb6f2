"""bench/models.py --quick runs to the end and prints its table (a smoke test: no timing is asserted; the figures
live in docs/benchmarks.md). It needs Paddle's venv, which writes the models and is the other column."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADINGS = ("machine:", "Paddle 3.3.1 legacy static Executor", "ResNet-18", "MobileNetV2", "NumPy float32 GEMM:",
            "Targets", "faster than Paddle's CPU executor")

pytestmark = pytest.mark.paddle


def test_models_bench_quick_runs_and_prints_the_table(tmp_path):
    if not (ROOT / ".venv-paddle" / "bin" / "python").exists():
        pytest.skip("no Paddle 3.3.1 venv: bench/models.py needs it to write and time the models")
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "models.py"), "--quick", "--repeat", "2", "--dir",
                        str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    missing = [h for h in HEADINGS if h not in p.stdout]
    assert not missing, f"missing headings {missing} in:\n{p.stdout}"
    # the outputs were checked against Paddle's: the max|diff| column holds small numbers
    rows = [line for line in p.stdout.splitlines() if line.startswith(("ResNet-18 ", "MobileNetV2 "))]
    assert len(rows) == 2 and all(float(r.split()[-1]) < 1e-4 for r in rows), rows


def test_lstm_bench_quick_matches_paddle_and_prints_both_rows(tmp_path):
    if not (ROOT / ".venv-paddle" / "bin" / "python").exists():
        pytest.skip("no Paddle 3.3.1 venv: bench/lstm_models.py needs it to write and time the LSTM")
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "lstm_models.py"), "--quick", "--json",
                        str(tmp_path / "rows.json")], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    assert "inference" in p.stdout and "training step (SGD)" in p.stdout
    diff = float(p.stdout.split("max|diff| / max|Paddle|:")[1].split(";")[0])
    assert diff < 1e-4, p.stdout
    ours, theirs = (float(x) for x in p.stdout.split("first training loss ")[1].splitlines()[0].split(" vs Paddle "))
    assert abs(ours - theirs) <= 1e-4 * max(1.0, abs(theirs)), p.stdout
    # the rows `bench/models.py --all` sums up: inference and a training step per thread count, Paddle's beside
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert sorted((r["what"], r["threads"]) for r in rows) == [("inference", 1), ("inference", 2),
                                                               ("training step", 1), ("training step", 2)], rows
    assert all(r["kernelcore_ms"] > 0 and r["paddle_ms"] > 0 for r in rows), rows


def test_cnn_train_bench_quick_checks_every_side_and_prints_the_ratios(tmp_path):
    """bench/cnn_train.py --quick on the small CNN: kernelcore's step matched Paddle's (loss and every updated
    persistable) before timing, the PyTorch port's too where torch imports; each thread row and the target print."""
    if not (ROOT / ".venv-paddle" / "bin" / "python").exists():
        pytest.skip("no Paddle 3.3.1 venv: bench/cnn_train.py needs it to write the training programs")
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "cnn_train.py"), "--quick", "--repeat", "1",
                        "--models", "train_cnn_b32", "--dir", str(tmp_path), "--profile"], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    out = p.stdout
    matched = out.split("updated persistables match")[0].rsplit(";", 1)[1].split()[0]
    done, total = (int(v) for v in matched.split("/"))
    assert done == total > 0, out
    assert "1 thread :" in out and "2 threads:" in out and "Target (issue 11)" in out, out
    assert "kernelcore time per op type" in out and " conv2d " in out, out
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "PyTorch not importable" in out, out
    else:
        assert "PyTorch port: first loss" in out and "kc/PyTorch" in out, out


def test_summary_marks_each_row_against_its_target(capsys):
    """bench/models.py --all's summary: inference against Paddle's executor, a training step against 1.5x
    PyTorch's, a side that was not timed shown as '-'."""
    sys.path[:0] = [str(ROOT / "bench")]
    try:
        import models
    finally:
        sys.path.remove(str(ROOT / "bench"))
    rows = [{"model": "A", "what": "inference", "threads": 1, "kernelcore_ms": 9.0, "pytorch_ms": 3.0,
             "paddle_ms": 10.0},
            {"model": "B", "what": "inference", "threads": 2, "kernelcore_ms": 11.0, "pytorch_ms": None,
             "paddle_ms": 10.0},
            {"model": "C", "what": "training step", "threads": 1, "kernelcore_ms": 15.0, "pytorch_ms": 10.0,
             "paddle_ms": 30.0},
            {"model": "D", "what": "training step", "threads": 2, "kernelcore_ms": 15.1, "pytorch_ms": 10.0,
             "paddle_ms": None}]
    models.summary(rows, have_torch=True)
    out = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line[:2] in ("A ", "B ", "C ",
                                                                                                   "D ")}
    assert out["A"].endswith("faster than Paddle: met") and " 3.00 " in out["A"] and " 0.90 " in out["A"]
    assert out["B"].endswith("faster than Paddle: NOT met") and " - " in out["B"]
    assert out["C"].endswith("<= 1.5x PyTorch: met")
    assert out["D"].endswith("<= 1.5x PyTorch: NOT met")


def test_gpu_models_bench_checks_every_model_through_the_strict_device(tmp_path):
    """bench/gpu_models.py --write (Paddle writes the bundle a GPU machine gets) then --strict: every model's output,
    loss and updated parameters through the GPU code path, against Paddle's and the CPU path's."""
    for venv in (".venv-paddle", ".venv-paddle2"):
        if not (ROOT / venv / "bin" / "python").exists():
            pytest.skip(f"no {venv}: bench/gpu_models.py --write needs Paddle 3.3.1 and 2.6.2")
    script, bundle = str(ROOT / "bench" / "gpu_models.py"), str(tmp_path / "bundle")
    for args in (["--write"], ["--strict"]):
        p = subprocess.run([sys.executable, script, bundle, *args], cwd=ROOT, capture_output=True, text=True,
                           timeout=900)
        assert p.returncode == 0, f"{args}: exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    for row in ("ResNet-18 (b8", "MobileNetV2 (b8", "BERT-style encoder (b8", "2-layer LSTM (b32", "small CNN step",
                "BERT-style step, adam (b8", "2-layer LSTM step", "ResNet-18 (b64)", "MobileNetV2 (b64)",
                "BERT-style encoder (b64)", "2-layer LSTM (b64)", "small CNN step, momentum (b64)",
                "BERT-style step, adam (b64)", "2-layer LSTM step, SGD (b64)"):
        assert row in p.stdout, f"no {row} row in:\n{p.stdout}"
    for column in ("GPU/torch", "GPU/CPU", "target"):
        assert column in p.stdout, f"no {column} column in:\n{p.stdout}"
    assert re.search(r"stepping, 2-layer LSTM .*step_timestep\(\).*: [1-9]\d* debug steps a session", p.stdout), p.stdout
    assert "all outputs, losses and updated parameters within 1e-4" in p.stdout, p.stdout
