"""Paddle's side of the model benchmarks (bench/models.py, bench/cnn_train.py): its environment, the programs its
generator writes, and a timing server (a script in Paddle's venv answering "name count" lines with run times)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PADDLE = ROOT / ".venv-paddle" / "bin" / "python"
GENERATOR = ROOT / "tests" / "paddle_oracle" / "make_vision_models.py"


def paddle_env(threads: int | None = None) -> dict:
    """Paddle 3.3.1 in its legacy IR, quiet; with `threads`, every thread pool it may use capped to that."""
    env = dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    if threads is not None:
        env.update(FLAGS_paddle_num_threads=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    return env


def generate(outdir: Path, names, suffix: str) -> None:
    """Have Paddle write the named cases into `outdir` unless `<name><suffix>` is there already."""
    missing = [n for n in names if not (outdir / f"{n}{suffix}").exists()]
    if not missing:
        return
    r = subprocess.run([str(PADDLE), str(GENERATOR), str(outdir), *missing], capture_output=True, text=True,
                       env=paddle_env())
    if r.returncode != 0 or any(not (outdir / f"{n}{suffix}").exists() for n in missing):
        sys.exit(f"Paddle could not write {', '.join(missing)}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


class PaddleServer:
    """`script` (in bench/) run by Paddle's venv (`python`: Paddle 3.3.1's unless told) on `outdir` and `names`,
    serving timed runs on request."""

    def __init__(self, script: str, outdir: Path, names, threads: int | None = None, python: Path = PADDLE):
        self.p = subprocess.Popen([str(python), str(ROOT / "bench" / script), str(outdir), *names],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=paddle_env(threads))
        line = self.p.stdout.readline()
        if not line:
            sys.exit(f"Paddle's timing server failed:\n{self.p.stderr.read()[-3000:]}")
        self.info = json.loads(line)

    def times(self, name: str, count: int, warm_s: float = 0.0) -> list[float]:
        """The seconds of `count` runs of case `name` in the server, after warm_s seconds of untimed runs."""
        self.p.stdin.write(f"{name} {count} {warm_s}\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        """End the server; one that died or hangs is killed (a bench's `finally` calls this after any error,
        which must not be hidden behind another)."""
        try:
            self.p.stdin.write("\n")
            self.p.stdin.close()
            self.p.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()
