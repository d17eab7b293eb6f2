"""The PIR op table against the API sweep's PIR programs (tests/paddle_oracle/api_sweep.py): every row the sweep's
programs exercise agrees with the signature Paddle's runtime reports for that op, and a function whose legacy
program (Paddle 3.3.1, FLAGS_enable_pir_api=0) runs with Paddle's outputs runs with them as PIR too, gradients
included. The sweep's programs are cached under tests/paddle_oracle/out/api_sweep/ (generated on a first run).
"""
import sys
from pathlib import Path

import pytest

from kernelcore.formats.pir_ops import PIR_OPS

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "paddle_oracle"
PADDLE3 = ROOT / ".venv-paddle"
IGNORED_ATTRS = {"place"}  # where Paddle puts a result (kernelcore runs an op's results where its inputs are)


def _sweep():
    if not (PADDLE3 / "bin" / "python").exists():
        pytest.skip(f"no Paddle 3.3.1 oracle at {PADDLE3}: run ./dev test")
    sys.path.insert(0, str(ORACLE))
    import api_sweep
    return api_sweep


@pytest.fixture(scope="module")
def sweep_tables():
    """{format key: {function: status}} for Paddle 3.3.1's legacy and PIR programs."""
    api_sweep = _sweep()
    return {key: api_sweep.sweep_format(key, venv, flag, 1, log=None)
            for key, _label, venv, flag in api_sweep.FORMATS if key in ("p3-legacy", "p3-pir")}


@pytest.fixture(scope="module")
def sweep_signatures():
    _sweep()
    import pir_signatures
    return pir_signatures.sweep_signatures()


@pytest.mark.paddle
def test_rows_the_sweep_exercises_agree_with_paddles_op_signatures(sweep_signatures):
    checked = 0
    for name, spec in PIR_OPS.items():
        sig = sweep_signatures.get(name)
        if not sig:
            continue
        checked += 1
        assert spec.pir_inputs == sig["inputs"], name
        assert [n for n, _ in spec.outputs] == sig["outputs"], name
        unknown = set(sig["attrs"]) - set(spec.attrs) - IGNORED_ATTRS
        assert not unknown, f"{name}: Paddle's attributes {unknown} have no place in the row"
    assert checked > len(PIR_OPS) // 2, checked


def _pir_gaps(tables, field: str, good: tuple) -> list[str]:
    legacy, pir = tables["p3-legacy"], tables["p3-pir"]
    gaps = []
    for fn, v in legacy.items():
        if fn is None or v.get(field) != good[0] or fn not in pir:
            continue
        p = pir[fn]
        if p["status"] == "Paddle itself cannot build it" or p.get(field) in good:
            continue
        what = p.get("missing") or p.get("grad_detail" if field == "grad" else "detail")
        gaps.append(f"{fn}: {p.get(field)} ({what}); legacy ops {v.get('ops')}")
    return gaps


@pytest.mark.paddle
def test_a_function_paddle_builds_as_pir_runs_there_wherever_its_legacy_program_does(sweep_tables):
    """The PIR reader maps every pd_op whose legacy op kernelcore runs: no function runs with Paddle's outputs in
    legacy form and not as PIR (a gap names the pd_op that has no row yet)."""
    gaps = _pir_gaps(sweep_tables, "status", ("runs with parity",))
    assert not gaps, "\n".join(gaps)


@pytest.mark.paddle
def test_a_pir_program_differentiates_wherever_its_legacy_program_does(sweep_tables):
    """PIR's reshape, transpose, squeeze, unsqueeze and flatten have no XShape result; the reader names one, as
    legacy programs do, so their gradients (which read X's shape from it) work on PIR programs."""
    gaps = _pir_gaps(sweep_tables, "grad", ("gradient parity", "Paddle's gradient is off"))
    assert not gaps, "\n".join(gaps)
