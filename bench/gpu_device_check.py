"""The fused device kernels and captured runs on a real GPU with CuPy (bench/gpu_check.sh runs this, then
bench/gpu_models.py). Without a GPU nothing here runs; the strict stand-in's tests (tests/test_device_kernels.py,
tests/test_captured_run.py) check the same logic with NumPy twins.

    python3 bench/gpu_device_check.py --out DIR [--repeat 50]

1. Every case of tests/device_cases.py on GPUPlace(0) against the reference kernels on the CPU: the CUDA bodies
   themselves, which the stand-in never compiles. The fused variant must have been chosen (the prepared op's
   kernel carries `.fast`), and the gate's fallback cases must still match.
2. Each fused case timed on the GPU against the reference on the GPU (fast paths switched off): the median of
   --repeat runs of the one-op program, each ending in a device synchronise.
3. A training step (an MLP with adam) and its inference: the reference op by op, the fused kernels op by op
   (return_numpy=False keeps a run out of the graph), and the fused kernels replayed as a CUDA graph; the three
   results compared, their medians timed.
4. The rnn op (bench/gpu_rnn_check.py): LSTM and GRU gradients through the fused steps against the CPU, and an
   inference rnn block replayed as a captured graph, timed against op by op.
Figures go to DIR/device_check.json; a failed check makes the exit status 1.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

import kernelcore as kc  # noqa: E402
from gpu_rnn_check import check_rnn  # noqa: E402
from kernelcore.runtime import captured_run, fast_paths  # noqa: E402
from kernelcore.runtime.place import StrictPlace, to_host  # noqa: E402


PLACE = kc.GPUPlace(0)


def _sync():
    if PLACE.kind == "gpu" and not isinstance(PLACE, StrictPlace):
        import cupy
        cupy.cuda.Device().synchronize()


def _median_ms(fn, repeat: int) -> float:
    fn()
    _sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def check_cases(repeat: int) -> tuple[list, list]:
    from device_cases import FALLBACK, FUSED, assert_same, build, outputs, reference
    rows, failures = [], []
    place = PLACE
    for case, training, kernels in FUSED + [(c, t, set()) for c, t in FALLBACK]:
        row = {"case": str(case), "fused": bool(kernels)}
        try:
            assert_same(outputs(case, place, training), reference(case, training), case)
            prog, feed, _ = build(case)
            exe = kc.Executor(place)
            chosen = getattr(exe.prepare(prog).ops[0].kernel, "fast", None) is not None
            if kernels and not chosen:  # (a fallback case may have it chosen: its gate says no at run time)
                raise AssertionError(f"{case}: no fast variant chosen")
            if kernels:
                scope = kc.Scope()
                dev_feed = {k: place.xp.asarray(v) for k, v in feed.items()}

                def once():  # return_numpy=False: op by op, no graph (the training step times those)
                    exe.run(prog, feed=dev_feed, fetch_list=[], scope=scope, training=training, return_numpy=False)
                row["fused_ms"] = _median_ms(once, repeat)
                with fast_paths.switched_off():
                    row["reference_ms"] = _median_ms(once, repeat)
            row["ok"] = True
        except Exception as e:  # every case reported, the first error of each kept
            row["ok"] = False
            row["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]
            failures.append(str(case))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows, failures


def _mlp(width: int, batch: int):
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [-1, width])
        h = L.fc(L.fc(x, width, act="relu"), width, act="relu")
        loss = L.mean(L.fc(h, 1, act="sigmoid"))
        kc.optimizer.Adam(1e-3).minimize(loss, startup)
    return main, startup, loss


def check_captured(repeat: int, width: int = 512, batch: int = 64) -> tuple[dict, list]:
    """One training step timed three ways, each from the same parameters; the losses of a few steps compared."""
    main, startup, loss = _mlp(width, batch)
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((batch, width)).astype(np.float32)} for _ in range(6)]
    init = kc.Scope()
    kc.Executor(kc.CPUPlace()).run(startup, scope=init)
    names = kc.formats.paddle_files.persistable_names(main)
    place = PLACE
    results, failures = {}, []
    for how in ("reference", "fused_op_by_op", "fused_graph"):
        scope = kc.Scope()
        for n in names:
            scope.var(n).value = place.xp.asarray(np.array(init.get(n)))
        exe = kc.Executor(place)
        keep = {"return_numpy": how != "fused_op_by_op"}

        def step(f):
            out = exe.run(main, feed=f, fetch_list=[loss], scope=scope, training=True, **keep)[0]
            return float(to_host(out))
        if how == "reference":
            with fast_paths.switched_off():
                losses = [step(f) for f in feeds]
                ms = _median_ms(lambda: step(feeds[0]), repeat)
        else:
            losses = [step(f) for f in feeds]
            ms = _median_ms(lambda: step(feeds[0]), repeat)
        state = captured_run.state_of(exe.prepare(main), scope, training=True)
        results[how] = {"losses": losses, "step_ms": ms, "graph": state.state if state else None}
        print(how, json.dumps(results[how]), flush=True)
    want = np.array(results["reference"]["losses"])
    for how in ("fused_op_by_op", "fused_graph"):
        if not np.allclose(results[how]["losses"], want, rtol=1e-4, atol=1e-6):
            failures.append(f"training step {how}: losses {results[how]['losses']} vs reference {list(want)}")
    if results["fused_graph"]["graph"] != captured_run.CAPTURED:
        failures.append(f"the training step was not captured: {results['fused_graph']['graph']}")
    return results, failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--strict", action="store_true", help="a dry run on the strict stand-in (its times mean nothing)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    global PLACE
    if args.strict:
        PLACE = StrictPlace()
        report = {"cupy": None, "device": "strict stand-in (times mean nothing)"}
    elif not kc.runtime.place.gpu_available():
        print("no CuPy or no GPU here: nothing to check (the strict stand-in's tests cover the Python side)")
        return 2
    else:
        import cupy
        report = {"cupy": cupy.__version__, "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    t0 = time.perf_counter()
    report["cases"], failures = check_cases(args.repeat)
    report["captured"], more = check_captured(args.repeat)
    report["rnn"], rnn_failures = check_rnn(PLACE, lambda fn: _median_ms(fn, args.repeat))
    report["failures"] = failures + more + rnn_failures
    report["seconds"] = round(time.perf_counter() - t0, 1)
    (args.out / "device_check.json").write_text(json.dumps(report, indent=1))
    print(f"{len(report['failures'])} failures; {report['seconds']} s; figures in {args.out / 'device_check.json'}")
    for f in report["failures"]:
        print("FAILED", f)
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
