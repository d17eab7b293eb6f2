"""bench/gpu_device_check.py, the script a session lent a GPU runs (bench/gpu_check.sh), dry-run on the strict
stand-in: it must get through every case and the captured training step, so device time is not spent on a crash."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_device_check_runs_through_on_the_stand_in(tmp_path):
    done = subprocess.run([sys.executable, "-W", "ignore", str(REPO / "bench" / "gpu_device_check.py"), "--strict",
                           "--repeat", "1", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "device_check.json").read_text())
    assert report["failures"] == [] and all(row["ok"] for row in report["cases"])
    assert report["captured"]["fused_graph"]["graph"] == "captured"
    assert all("fused_ms" in row for row in report["cases"] if row["fused"])
