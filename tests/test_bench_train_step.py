"""bench/train_step.py --quick runs to the end and prints its table (a smoke test: no timing is asserted;
the figures live in docs/benchmarks.md)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("sklearn", reason="the bench trains on scikit-learn's digits")


def test_train_step_bench_quick_runs():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "train_step.py"), "--quick"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    for heading in ("machine:", "versions:", "Training step of the digits MLP", "kc ÷ torch"):
        assert heading in p.stdout, p.stdout
    lines = [l for l in p.stdout.splitlines() if l.strip().startswith(("32 |", "256 |"))]
    assert len(lines) == 2, p.stdout
