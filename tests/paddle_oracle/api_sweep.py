"""The Paddle API sweep, end to end: Paddle writes a program per call site of its public API, kernelcore runs each.

    .venv/bin/python tests/paddle_oracle/api_sweep.py [--subset K] [--write]

For each Paddle format (2.6.2 legacy, 3.3.1 legacy, 3.3.1 PIR) api_sweep_gen.py runs in its venv (at most one
process, niced); its output is cached under tests/paddle_oracle/out/api_sweep/, keyed by the generator's and the
table's source, so a rerun is instant. Then api_sweep_check.py classifies every call site here and each function
gets, per format, the worst status of its call sites. `--write` writes docs/paddle-coverage.md and
kernelcore/ir/op_sources.py from the run (a full run: no --subset). `./dev sweep` is this with --write.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import api_sweep_check as check  # noqa: E402

CACHE = HERE / "out" / "api_sweep"
CANNOT_BUILD = "Paddle itself cannot build it"
NOT_DIFFERENTIABLE = "-"
# (key, label, venv, whether Paddle's PIR API is on)
FORMATS = [
    ("p2-legacy", "Paddle 2.6.2, legacy", ROOT / ".venv-paddle2", None),
    ("p3-legacy", "Paddle 3.3.1, legacy", ROOT / ".venv-paddle", "0"),
    ("p3-pir", "Paddle 3.3.1, PIR .json", ROOT / ".venv-paddle", ""),
]
MAX_RESTARTS = 200
ENTRY_TIMEOUT_S = 60
GENERATE_S = "generate_s.txt"  # a Paddle crash costs one restart; the generator resumes after the call that crashed
STATUS_ORDER = [check.MISSING, check.WRONG, check.PARITY]


def source_hash(fmt_key: str, subset: int) -> str:
    h = hashlib.sha256(f"{fmt_key} {subset}".encode())
    for name in ("api_sweep_gen.py", "api_sweep_table.py"):
        h.update((HERE / name).read_bytes())
    return h.hexdigest()[:16]


def cache_dir(fmt_key: str, subset: int) -> Path:
    return CACHE / f"{fmt_key}-s{subset}-{source_hash(fmt_key, subset)}"


def generate(fmt_key: str, venv: Path, pir_flag, subset: int, log=print) -> Path | None:
    """The directory of Paddle's programs for one format, generated unless cached; None without the venv."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    out = cache_dir(fmt_key, subset)
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{fmt_key}-s{subset}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second sweep (another test run) waits, then finds the cache
        return _generate_locked(out, fmt_key, python, pir_flag, subset, log)


def _generate_locked(out: Path, fmt_key: str, python: Path, pir_flag, subset: int, log) -> Path:
    if not (out / "manifest.json").exists():
        for stale in CACHE.glob(f"{fmt_key}-s{subset}-*"):  # written by an older generator or table
            if stale != out:
                shutil.rmtree(stale)
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    env.pop("FLAGS_enable_pir_api", None)
    if pir_flag:
        env["FLAGS_enable_pir_api"] = pir_flag
    args = ["nice", str(python), str(HERE / "api_sweep_gen.py"), str(out), "--subset", str(subset)]
    start = time.perf_counter()
    for _ in range(MAX_RESTARTS):
        if (out / "manifest.json").exists():
            if not (out / GENERATE_S).exists():  # what Paddle's side cost when it ran, for the report
                (out / GENERATE_S).write_text(f"{time.perf_counter() - start:.1f}")
            return out
        code = _run_watched(args, env, out / "current", log)
        if code != 0 and log:
            log(f"  ({fmt_key}: Paddle stopped ({code}); resuming after the call it was in)")
    raise RuntimeError(f"{fmt_key}: the generator did not finish after {MAX_RESTARTS} restarts ({out})")


def _run_watched(args, env, current: Path, log) -> int | str:
    """Run the generator; kill it when one entry (its `current` file) takes longer than ENTRY_TIMEOUT_S: some
    calls hang Paddle, and a rerun records that entry as one Paddle cannot build."""
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=None if log else subprocess.DEVNULL)
    while True:
        try:
            return proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        try:
            stuck = time.time() - current.stat().st_mtime > ENTRY_TIMEOUT_S
        except FileNotFoundError:
            stuck = False
        if stuck:
            proc.kill()
            proc.wait()
            return f"killed after {ENTRY_TIMEOUT_S} s in {current.read_text()}"


def _worst(statuses):
    return min(statuses, key=STATUS_ORDER.index)


def function_status(records: list[dict], results: dict) -> dict:
    """One function's status in one format, from its call sites' records and results (keyed by site id)."""
    if all(r["status"] == "not-ops" for r in records):
        return {"status": "not-ops"}
    base = records[0]
    if base["status"] == "no_ops":
        return {"status": "not-ops", "detail": "writes no ops"}
    if base["status"] != "built":
        return {"status": CANNOT_BUILD, "detail": base.get("error", "")}
    got = [results[r["id"]] for r in records if r["status"] == "built"]
    status = _worst([g["status"] for g in got])
    bad = next((g for g in got if g["status"] == status), got[0])
    out = {"status": status, "detail": bad.get("detail", ""), "missing": sorted({m for g in got for m in g["missing"]}),
           "ops": sorted({o for r in records for o in r.get("ops", [])}), "grad": NOT_DIFFERENTIABLE,
           "n_ops": min(len(set(r["ops"])) for r in records if r["status"] == "built")}
    diff = [(r, results[r["id"]]) for r in records if r["status"] == "built" and r.get("grad_of")]
    if diff:
        grads = [g.get("grad") or f"forward: {g['status']}" for _, g in diff]
        fine = (check.GRAD_PARITY, check.PADDLE_GRAD_OFF)
        worst = next((x for x in grads if x not in fine), next((x for x in grads if x != check.GRAD_PARITY),
                                                               check.GRAD_PARITY))
        out["grad"] = worst
        bad_grad = next((g for _, g in diff if g.get("grad") == worst), None)
        if bad_grad and bad_grad.get("grad_detail"):
            out["grad_detail"] = bad_grad["grad_detail"]
    return out


def sweep_format(fmt_key, venv, pir_flag, subset, log=print) -> dict | None:
    """{function: status dict} for one format, plus the manifest's Paddle version under None."""
    t0 = time.perf_counter()
    directory = generate(fmt_key, venv, pir_flag, subset, log)
    if directory is None:
        return None
    t1 = time.perf_counter()
    manifest, results = check.check_dir(directory)
    t2 = time.perf_counter()
    timing = directory / GENERATE_S
    t0 = t1 - float(timing.read_text()) if timing.exists() else t0
    by_site = {r["id"]: r for r in results}
    by_function = defaultdict(list)
    for rec in manifest["records"]:
        by_function[rec["function"]].append(rec)
    table = {fn: function_status(recs, by_site) for fn, recs in by_function.items()}
    table[None] = {"paddle": manifest["paddle"], "generate_s": round(t1 - t0, 1), "check_s": round(t2 - t1, 1),
                   "sites": len(results)}
    if log:
        log(f"  {fmt_key}: Paddle {manifest['paddle']}, {len(results)} programs; generated in {t1 - t0:.0f} s, "
            f"checked in {t2 - t1:.0f} s")
    return table


def totals(table: dict) -> dict:
    rows = [v for k, v in table.items() if k is not None and v["status"] != "not-ops"]
    built = [v for v in rows if v["status"] != CANNOT_BUILD]
    graded = [v for v in built if v.get("grad", NOT_DIFFERENTIABLE) != NOT_DIFFERENTIABLE]
    diff = [v for v in graded if v["grad"] != check.PADDLE_GRAD_OFF]
    count = lambda items, s: sum(1 for v in items if v["status"] == s)  # noqa: E731
    return {"swept": len(rows), "built": len(built), "parity": count(built, check.PARITY),
            "missing": count(built, check.MISSING), "wrong": count(built, check.WRONG),
            "cannot_build": len(rows) - len(built), "differentiable": len(diff),
            "grad_parity": sum(1 for v in diff if v["grad"] == check.GRAD_PARITY),
            "paddle_grad_off": len(graded) - len(diff)}


def missing_ranking(tables: dict) -> list[tuple[str, list[str]]]:
    """Every op type some format lacks, with the functions it blocks (in any format), most blocking first."""
    blocks = defaultdict(set)
    for table in tables.values():
        for fn, v in table.items():
            if fn is not None:
                for op in v.get("missing", []):
                    blocks[op].add(fn)
    return sorted(((op, sorted(fns)) for op, fns in blocks.items()), key=lambda x: (-len(x[1]), x[0]))


def run(subset: int = 1, log=print) -> dict:
    tables = {}
    for key, label, venv, flag in FORMATS:
        table = sweep_format(key, venv, flag, subset, log)
        if table is not None:
            tables[key] = table
    return tables


def main(argv):
    subset = int(argv[argv.index("--subset") + 1]) if "--subset" in argv else 1
    t0 = time.perf_counter()
    tables = run(subset)
    for key, table in tables.items():
        t = totals(table)
        print(f"{key}: {t['parity']}/{t['built']} with parity ({t['swept']} swept, {t['cannot_build']} Paddle "
              f"cannot build), {t['grad_parity']}/{t['differentiable']} gradients, {t['missing']} missing op, "
              f"{t['wrong']} wrong values")
    print(f"sweep: {time.perf_counter() - t0:.0f} s")
    if "--write" in argv:
        if subset != 1:
            sys.exit("api_sweep.py: --write needs the whole sweep (no --subset)")
        import api_sweep_report as report
        report.write(tables, time.perf_counter() - t0)


if __name__ == "__main__":
    main(sys.argv[1:])
