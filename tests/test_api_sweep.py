"""The Paddle API sweep (tests/paddle_oracle/api_sweep*.py) and what it feeds: the message about a missing op.

Without Paddle: the sweep's comparison and classification rules, and that a program holding an op kernelcore
lacks still opens, draws, and says which Paddle function writes that op (kernelcore/ir/op_sources.py).
With the Paddle venvs (./dev test): a fast subset of the sweep (one function in SUBSET, all three formats,
cached under tests/paddle_oracle/out/api_sweep/) runs here, and what docs/paddle-coverage.md says runs with
parity still does; the whole sweep and its report are ./dev sweep.
"""
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from kernelcore.errors import UnknownOpError
from kernelcore.ir.op_sources import OP_SOURCES, source_hint, written_by
from kernelcore.ir.program import Program
from kernelcore.ir.registry import get_op_def, has_op
from kernelcore.ir.support import UnsupportedOpsWarning, check_supported
from kernelcore.view.display import program_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "paddle_oracle"))
import api_sweep as sweep  # noqa: E402
import api_sweep_check as check  # noqa: E402
import api_sweep_report as report  # noqa: E402

SUBSET = 3  # one function in three: a few hundred call sites per format
DOC = ROOT / "docs" / "paddle-coverage.md"


def lacking_op() -> str:
    """An op type the sweep saw Paddle write that kernelcore has no kernel for."""
    missing = [t for t in OP_SOURCES if not has_op(t)]
    if not missing:
        pytest.skip("kernelcore has a kernel for every op type the sweep saw")
    return missing[0]


def program_with(op_type: str) -> Program:
    """x -> relu -> `op_type` -> y, the unknown op written into the desc as a loaded file would hold it."""
    prog = Program()
    block = prog.global_block()
    block.create_var("x", [2, 3], "float32")
    block.create_var("h", [2, 3], "float32")
    block.create_var("y", [2, 3], "float32")
    block.append_op("relu", inputs={"X": ["x"]}, outputs={"Out": ["h"]})
    op = block.desc.ops.add()
    op.type = op_type
    slot = op.inputs.add()
    slot.parameter, slot.arguments[:] = "X", ["h"]
    slot = op.outputs.add()
    slot.parameter, slot.arguments[:] = "Out", ["y"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsupportedOpsWarning)
        return Program.from_bytes(prog.desc.SerializeToString())


# -- the message ------------------------------------------------------------------------------------------------
def test_missing_op_names_the_paddle_function_that_writes_it():
    op_type = lacking_op()
    with pytest.raises(UnknownOpError) as e:
        check_supported(program_with(op_type))
    assert f"written by {written_by(op_type)[0]}" in str(e.value)
    with pytest.raises(UnknownOpError, match=re.escape(f"written by {written_by(op_type)[0]}")):
        get_op_def(op_type)


def test_program_with_a_missing_op_still_opens_and_draws():
    op_type = lacking_op()
    data = program_with(op_type).desc.SerializeToString()
    with pytest.warns(UnsupportedOpsWarning, match=re.escape(written_by(op_type)[0])):
        prog = Program.from_bytes(data, source="sweep.pdmodel")
    drawn = program_json(prog)
    ops = [op for b in drawn["blocks"] for op in b["ops"]]
    assert [op["type"] for op in ops] == ["relu", op_type]
    assert any(op.get("unsupported") for op in ops)


def test_a_grad_op_is_traced_to_its_forward_function():
    op_type = next(t for t in OP_SOURCES if not t.endswith("_grad"))
    if f"{op_type}_grad" in OP_SOURCES:
        pytest.skip("the sweep saw this grad op itself")
    assert source_hint(f"{op_type}_grad") == f"; the gradient of {op_type}, written by {', '.join(OP_SOURCES[op_type])}"
    assert source_hint("no_such_op_anywhere") == ""


# -- the comparison and the classification ----------------------------------------------------------------------
def test_agreement_is_relative_to_the_outputs_scale():
    want = np.array([1000.0, 1.0, np.nan], "float32")
    assert check.agree(want + np.float32(5e-3), want, 1e-5) is None          # 5e-3 is within 1e-5 of 1000
    assert "max error" in check.agree(want + np.array([0, 0.05, 0], "float32"), want, 1e-5)
    assert "dtype" in check.agree(want.astype("float64"), want, 1e-5)
    assert "shape" in check.agree(want[:2], want, 1e-5)
    assert check.agree(np.array([1, 2]), np.array([1, 3]), 1e-5) == "values differ"


def _site(status, grad=None, missing=()):
    return {"status": status, "grad": grad, "missing": list(missing), "detail": status, "grad_detail": ""}


def test_a_function_has_the_worst_status_of_its_call_sites():
    records = [{"id": "f", "status": "built", "ops": ["a"], "grad_of": ["x0"]},
               {"id": "f[axis=0]", "status": "built", "ops": ["a", "b"], "grad_of": ["x0"]},
               {"id": "f[keepdim=True]", "status": "cannot_build"}]
    results = {"f": _site(check.PARITY, check.GRAD_PARITY), "f[axis=0]": _site(check.MISSING, missing=["b"])}
    v = sweep.function_status(records, results)
    assert (v["status"], v["missing"], v["n_ops"]) == (check.MISSING, ["b"], 1)
    assert v["grad"] == f"forward: {check.MISSING}"
    results["f[axis=0]"] = _site(check.PARITY, check.GRAD_WRONG)
    assert sweep.function_status(records, results)["grad"] == check.GRAD_WRONG
    assert sweep.function_status([{"id": "g", "status": "cannot_build", "error": "e"}], {})["status"] == \
        sweep.CANNOT_BUILD


# -- the sweep itself (Paddle) ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def subset():
    tables = sweep.run(SUBSET, log=None)
    if not tables:
        pytest.skip("no Paddle venv: run ./dev test, or bash tests/paddle_oracle/setup_env.sh .venv-paddle2 2.6.2")
    return tables


def documented_parity() -> dict[str, set]:
    """{format key: functions docs/paddle-coverage.md lists with forward parity}."""
    keys = [k for k, *_ in sweep.FORMATS]
    out = {k: set() for k in keys}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| `([^`]+)` \| (.*) \|$", line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(2).split(" | ")]
        for k, c in zip(keys, cells[0:6:2]):
            if c == "parity":
                out[k].add(m.group(1))
    return out


@pytest.mark.paddle
def test_what_the_report_says_runs_still_runs(subset):
    """Every swept function the committed report lists with parity still has it (new parity is welcome)."""
    documented = documented_parity()
    lost = {k: sorted(fn for fn, v in t.items() if fn in documented[k] and v["status"] != check.PARITY)
            for k, t in subset.items()}
    assert not any(lost.values()), lost
    assert sum(len(v) for v in documented.values()) > 0


@pytest.mark.paddle
def test_the_subset_is_classified_from_real_runs(subset):
    """The subset holds functions of each kind, and each missing op it reports is one kernelcore lacks (or the
    PIR reader cannot read); every op type the subset's legacy programs hold is in op_sources."""
    for key, table in subset.items():
        statuses = {v["status"] for fn, v in table.items() if fn is not None}
        assert check.PARITY in statuses, key
        for fn, v in table.items():
            if fn is not None and v["status"] == check.MISSING and key != "p3-pir":
                assert v["missing"] and not any(has_op(m) for m in v["missing"]), (key, fn, v["missing"])
    seen = {op for key in report.LEGACY for fn, v in subset.get(key, {}).items() if fn is not None
            for op in v.get("ops", [])} - {"feed", "fetch"}
    assert seen and not seen - set(OP_SOURCES), sorted(seen - set(OP_SOURCES))


def _parity_site(predicate):
    """(directory, record) of a subset call site with parity that `predicate` accepts."""
    directory = sweep.cache_dir("p2-legacy", SUBSET)
    manifest, results = check.check_dir(directory)
    built = [r for r in manifest["records"] if r["status"] == "built"]
    return directory, next(r for r, res in zip(built, results)
                           if res["status"] == check.PARITY and not r["random"]
                           and predicate(r, res, _arrays(directory, r)))


def _arrays(directory, rec):
    with np.load(directory / f"{rec['file']}.npz") as npz:
        return dict(npz)


def _copy_site(directory, rec, into, change):
    """The site's files copied into `into`, with `change` applied to its recorded arrays."""
    for suffix in (".pdmodel", ".pdiparams", ".fwd.pb"):
        src = directory / f"{rec['file']}{suffix}"
        if src.exists():
            (into / src.name).write_bytes(src.read_bytes())
    data = _arrays(directory, rec)
    change(data)
    np.savez(into / f"{rec['file']}.npz", **data)


def _check(directory, rec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check.check_site(directory, rec, "legacy")


@pytest.mark.paddle
def test_a_wrong_output_is_found(subset, tmp_path):
    """The comparison can fail: one of Paddle's recorded outputs changed gives "wrong values"."""
    directory, rec = _parity_site(lambda r, res, data: r["out_dtypes"][0].startswith("float"))
    _copy_site(directory, rec, tmp_path, lambda d: d.update({"out/0": d["out/0"] + np.float32(0.5)}))
    assert _check(tmp_path, rec)["status"] == check.WRONG


@pytest.mark.paddle
def test_finite_differences_tell_whose_gradient_is_off(subset, tmp_path):
    """Paddle's recorded gradient changed: kernelcore's no longer matches it, and central differences of the
    forward side with kernelcore's; the unchanged site has gradient parity."""
    directory, rec = _parity_site(lambda r, res, data: res["grad"] == check.GRAD_PARITY
                                   and data[r["grad_of"][0]].size <= check.FD_MAX_ELEMENTS)
    name = f"grad/{rec['grad_of'][0]}"
    assert _check(directory, rec)["grad"] == check.GRAD_PARITY
    _copy_site(directory, rec, tmp_path, lambda d: d.update({name: d[name] + np.float32(0.5)}))
    assert _check(tmp_path, rec)["grad"] == check.PADDLE_GRAD_OFF


@pytest.mark.paddle
def test_op_sources_is_what_the_whole_sweep_writes():
    """kernelcore/ir/op_sources.py is fresh: the whole sweep (./dev sweep, when its output is cached here) writes
    the same table."""
    keys = [k for k, *_ in sweep.FORMATS]
    if not all((sweep.cache_dir(k, 1) / "manifest.json").exists() for k in keys):
        pytest.skip("the whole sweep is not cached here: ./dev sweep")
    tables = sweep.run(1, log=None)
    assert {op: tuple(fns) for op, fns in report.op_sources(tables).items()} == OP_SOURCES
