"""One machine-readable row per timed figure, for `bench/models.py --all`: each model bench given `--json FILE`
writes its rows there, and the summary reads them back."""
from __future__ import annotations

import json
from pathlib import Path


def row(model: str, what: str, threads: int, kernelcore, pytorch=None, paddle=None) -> dict:
    """Best seconds of each side (lists of run times, or None where a side was not timed), in ms."""
    best = (lambda ts: round(min(ts) * 1e3, 3) if ts else None)
    return {"model": model, "what": what, "threads": threads, "kernelcore_ms": best(kernelcore),
            "pytorch_ms": best(pytorch), "paddle_ms": best(paddle)}


def write(path, rows: list[dict]) -> None:
    if path:
        Path(path).write_text(json.dumps(rows, indent=1))


def read(path) -> list[dict]:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else []
