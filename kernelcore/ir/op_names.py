"""Names of op types: which ones PaddlePaddle registers (kernelcore/ir/paddle_op_types.txt, written by
tests/paddle_oracle/make_op_types.py from Paddle 2.6.2 and 3.3.1), and the did-you-mean rule for an op
type kernelcore does not know.

A Paddle op type kernelcore lacks is not a typo: suggesting a registered name that merely looks alike
(`shape` -> `reshape2`, `reduce_min` -> `reduce_mean`) misleads, so none is offered. Any other unknown
name gets the registered names that are close: difflib's ratio of at least SUGGEST_CUTOFF (0.8; difflib's
default, 0.6, offers `reshape2` for `shape`), within NEAR_BEST of the closest one. A leaf: imports nothing from kernelcore.
"""
from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

PADDLE_OP_TYPES_FILE = Path(__file__).with_name("paddle_op_types.txt")
SUGGEST_CUTOFF = 0.8
NEAR_BEST = 0.05  # and only names about as close as the closest: `elementwis_add` is not `elementwise_div`


@lru_cache(maxsize=1)
def paddle_op_types() -> frozenset:
    try:
        text = PADDLE_OP_TYPES_FILE.read_text()
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def is_paddle_op(op_type: str) -> bool:
    return op_type in paddle_op_types()


def close_op_types(op_type: str, registered, n: int = 3) -> list[str]:
    """Registered op types `op_type` may be a misspelling of ([] for Paddle's own op types)."""
    if is_paddle_op(op_type):
        return []
    scored = []
    for name in registered:
        m = difflib.SequenceMatcher(None, op_type, name)
        if m.real_quick_ratio() >= SUGGEST_CUTOFF and m.quick_ratio() >= SUGGEST_CUTOFF:
            r = m.ratio()
            if r >= SUGGEST_CUTOFF:
                scored.append((-r, name))
    scored.sort()
    best = -scored[0][0] if scored else 0.0
    return [name for r, name in scored[:n] if -r >= best - NEAR_BEST]
