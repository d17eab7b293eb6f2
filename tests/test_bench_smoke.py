"""bench/executor_overhead.py --quick runs to the end and prints its table.

A smoke test only: no timing is asserted (the figures live in docs/benchmarks.md).
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADINGS = ("machine:", "versions:", "Per op: chain of 200 elementwise_add", "(a) NumPy", "(b) kernelcore, tracing off",
            'kc.trace(retain="none")', 'kc.trace(retain="shapes")', 'kc.trace(retain="references")',
            "(d) PyTorch eager", "(e) Paddle legacy static Executor", "Fixed cost of a run", "MLP 784-256-256-10",
            "Targets")


def test_executor_overhead_quick_runs_and_prints_the_table():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "executor_overhead.py"), "--quick"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    missing = [h for h in HEADINGS if h not in p.stdout]
    assert not missing, f"missing headings {missing} in:\n{p.stdout}"


def test_rnn_debug_cost_quick_runs_and_prints_every_row():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "rnn_debug_cost.py"), "--quick", "--steps", "10"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    rows = ("untraced run", "traced, retain=none", "traced, retain=shapes", "traced, retain=references",
            "debug session, run to end", "debug session, step() per op", "debug session, step_timestep()",
            "one debug step", "LSTM (kc.layers.lstm)", "traced, default retention")
    missing = [r for r in rows if r not in p.stdout]
    assert not missing, f"missing rows {missing} in:\n{p.stdout}"
