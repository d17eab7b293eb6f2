"""What the executor costs on top of the kernels it calls.

    python bench/executor_overhead.py          # the full table (~35 s)
    python bench/executor_overhead.py --quick  # a smoke run: same table, few short repeats

One run prints one table:
  * µs per op of a chain of 200 `elementwise_add` ops on [1,1] float32 (h = h + y, as Paddle's
    chain): plain NumPy, kernelcore's kernel called directly, kernelcore with tracing off and under
    `kc.trace(retain=...)` for "none", "shapes", "references", PyTorch eager (CPU) and Paddle's legacy
    static Executor (in its own venv, bench/_paddle_chain.py);
  * the fixed cost of a run (feed one var, fetch it, no ops);
  * a 3-layer MLP (784-256-256-10, batch 256, mul/elementwise_add/relu/softmax): kernelcore's run time
    over plain NumPy doing the same math, with rows that split the difference;
  * the targets (docs/benchmarks.md), each marked met or not.

For kernelcore and Paddle the per-op figure is the marginal cost, (run of the chain - run of the
same program with no ops) / 200, so the per-run fixed cost is not spread over the ops; the whole
run / 200 is shown beside it. NumPy and PyTorch rows are a Python loop's time / 200.
Timing: _timing.measure (warm-up, best and median of several repeats, garbage collector on).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # _timing, and kernelcore from this checkout without installing
from _timing import measure, measure_interleaved  # noqa: E402

import kernelcore as kc  # noqa: E402
from kernelcore.ir.registry import get_op_def, has_op  # noqa: E402

TRACE_MODES = ("none", "shapes", "references")
# The targets docs/benchmarks.md records: per op ÷ the bare NumPy call, traced (default retention) ÷ untraced
# per op, the fixed cost of a run (µs) and the MLP ÷ NumPy.
TARGET_OFF_RATIO, TARGET_TRACED_RATIO, TARGET_FIXED, TARGET_MLP = 1.5, 2.0, 10.0, 1.1
DEFAULT_RETAIN = "shapes"  # kc.trace()'s default
SCALE = 1.0001
PADDLE_PY = ROOT / ".venv-paddle" / "bin" / "python"


# -- the machine ----------------------------------------------------------------------------------
def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    logical = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else logical
    return f"{model}, {logical} logical cores ({usable} usable); {platform.system()} {platform.release()}"


# -- programs -------------------------------------------------------------------------------------
def chain_program(n_ops: int, with_y: bool = True, op: str = "elementwise_add"):
    """x, y: [1,1] float32; h = x; n_ops times h = elementwise_add(h, y) (or h = scale(h, 1.0001)).
    Returns (program, h)."""
    prog = kc.Program()
    with kc.program_guard(prog):
        b = prog.global_block()
        h = b.create_var("x", shape=[1, 1], dtype="float32")
        if with_y:
            y = b.create_var("y", shape=[1, 1], dtype="float32")
            for _ in range(n_ops):
                h = kc.op.elementwise_add(h, y) if op == "elementwise_add" else kc.op.scale(h, scale=SCALE)
    return prog, h


def ensure_mlp_ops() -> list[str]:
    """mul and softmax are landing in kernelcore/ops; until then register stand-ins with Paddle's
    names, slots and semantics so the MLP runs the same program. Returns the stand-ins' names."""
    from kernelcore.ir.proto.framework_pb2 import AttrType as A
    from kernelcore.ir.registry import Attr, In, Out, register_op
    stand_ins = []
    if not has_op("mul"):
        def infer_mul(ic):
            x, y = ic.shape("X"), ic.shape("Y")
            xn, yn = ic.attr("x_num_col_dims"), ic.attr("y_num_col_dims")
            ic.set_output("Out", tuple(x[:xn]) + tuple(y[yn:]), ic.dtype("X"))
        d = register_op("mul", "Out = flatten(X, x_num_col_dims) @ flatten(Y, y_num_col_dims) "
                        "(bench stand-in)", inputs=[In("X"), In("Y")], outputs=[Out("Out")],
                        attrs=[Attr("x_num_col_dims", A.INT, "", 1), Attr("y_num_col_dims", A.INT, "", 1)],
                        infer_shape=infer_mul)

        @d.kernel()
        def mul(ctx, ins, attrs):
            x, y = ins
            xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
            x2 = x if x.ndim == 2 and xn == 1 else x.reshape(int(np.prod(x.shape[:xn])), -1)
            y2 = y if y.ndim == 2 and yn == 1 else y.reshape(int(np.prod(y.shape[:yn])), -1)
            out = x2 @ y2
            return (out if x.ndim == 2 and y.ndim == 2 else out.reshape(x.shape[:xn] + y.shape[yn:]),)
        stand_ins.append("mul")
    if not has_op("softmax"):
        def infer_same(ic):
            ic.set_output("Out", ic.shape("X"), ic.dtype("X"))
        d = register_op("softmax", "Out = exp(X - max) / sum(exp(X - max)) along axis (bench stand-in)",
                        inputs=[In("X")], outputs=[Out("Out")], attrs=[Attr("axis", A.INT, "", -1)],
                        infer_shape=infer_same)

        @d.kernel()
        def softmax(ctx, ins, attrs):
            x, xp, axis = ins[0], ctx.xp, attrs["axis"]
            e = xp.exp(x - x.max(axis=axis, keepdims=True))
            return (e / e.sum(axis=axis, keepdims=True),)
        stand_ins.append("softmax")
    return stand_ins


MLP_DIMS = (784, 256, 256, 10)


def mlp_program():
    prog = kc.Program()
    with kc.program_guard(prog):
        b = prog.global_block()
        h = b.create_var("x", shape=[-1, MLP_DIMS[0]], dtype="float32")
        for i, (n_in, n_out) in enumerate(zip(MLP_DIMS, MLP_DIMS[1:])):
            w = b.create_parameter(f"w{i}", shape=[n_in, n_out])
            bias = b.create_parameter(f"b{i}", shape=[n_out])
            h = kc.op.elementwise_add(kc.op.mul(h, w), bias, axis=1)
            h = kc.op.relu(h) if i < len(MLP_DIMS) - 2 else kc.op.softmax(h)
    return prog, h


def numpy_mlp(x, params, keep=False):
    """The same math as the program, one NumPy call per kernel's NumPy call. keep=True holds every
    intermediate until the next call replaces it, as a scope holds every op's output."""
    kept = []
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w
        kept.append(h)
        h = h + b
        kept.append(h)
        if i < len(params) - 1:
            h = np.maximum(h, 0)
        else:
            e = np.exp(h - h.max(axis=-1, keepdims=True))
            h = e / e.sum(axis=-1, keepdims=True)
        kept.append(h)
    if keep:
        _KEPT[:] = kept
    return h


_KEPT: list = []


def mlp_kernels_only(exe, prog, x, params):
    """kernelcore's own kernels for the program's ops, called in order from a plain loop (values in
    a dict, kept like a scope keeps them): what the MLP costs without the executor. Uses the
    executor's prepared ops; None if their layout changed."""
    try:
        ops = [(op.kernel, op.attrs, [n for _, ns, _ in op.ins for n in ns], [n for _, ns, _ in op.outs for n in ns])
               for op in exe.prepare(prog).ops]
    except AttributeError:
        return None
    ctx = type("KernelContext", (), {"xp": np, "training": False})()
    vals = {}
    for i, (w, b) in enumerate(params):
        vals[f"w{i}"], vals[f"b{i}"] = w, b

    def run():
        vals["x"] = x
        for kernel, attrs, ins, outs in ops:
            for name, value in zip(outs, kernel(ctx, [vals[n] for n in ins], attrs)):
                vals[name] = value
        return vals[outs[0]]
    return run


# -- measurements -----------------------------------------------------------------------------------
def us(pair, scale=1.0):
    return tuple(v * 1e6 / scale for v in pair)


def bench_all(a) -> dict:
    n = a.ops
    opts = dict(repeat=a.repeat, min_s=a.min_s)
    one = np.ones((1, 1), np.float32)
    r: dict = {"ops": n}

    # (a) NumPy: the same adds in a Python loop
    def numpy_chain():
        h = one
        for _ in range(n):
            h = np.add(h, one)
        return h
    assert numpy_chain()[0, 0] == n + 1
    r["numpy"] = us(measure(numpy_chain, **opts), n)

    # (a') kernelcore's own kernel, no executor: the floor the executor adds its loop to
    kernel = get_op_def("elementwise_add").find_kernel("cpu", "float32")
    ctx, attrs = type("Ctx", (), {"xp": np})(), {"axis": -1}

    def kernel_chain():
        h = one
        for _ in range(n):
            h = kernel(ctx, [h, one], attrs)[0]
        return h
    assert kernel_chain()[0, 0] == n + 1
    r["kernel"] = us(measure(kernel_chain, **opts), n)

    # (b, c) kernelcore: the chain, its zero-op twin (same feeds) and the fixed-cost program. Every row of a
    # chain is timed in turn with the others (measure_interleaved): a per-op figure is a difference of two
    # runs and a traced ratio a quotient of two differences, and load that comes and goes between rows
    # timed one after another skews both.
    exe = kc.Executor(kc.CPUPlace())

    def runner(prog, feed, fl, scope, mode):
        if mode is None:
            def run():
                return exe.run(prog, feed=feed, fetch_list=fl, scope=scope)
        else:  # a trace per run, as `with kc.trace() as tr: exe.run(...)` is written
            def run():
                with kc.trace(retain=mode):
                    return exe.run(prog, feed=feed, fetch_list=fl, scope=scope)
        return run

    def time_chains(progs, feeds, modes, prefix, check):
        keys, fns = [], []
        for mode in modes:
            for key, (prog, fetch) in progs.items():
                exe.prepare(prog)
                run = runner(prog, feeds[key], [fetch], kc.Scope(), mode)
                out = run()
                if key == "chain":
                    check(out)
                keys.append(f"{prefix}:{mode or 'off'}:{key}")
                fns.append(run)
        for k, pair in zip(keys, measure_interleaved(fns, repeat=a.repeat * 3, min_s=a.min_s / 3)):
            r[k] = us(pair)
        for mode in modes:
            c, z = r[f"{prefix}:{mode or 'off'}:chain"], r[f"{prefix}:{mode or 'off'}:chain0"]
            r[f"{prefix}:{mode or 'off'}"] = tuple((ci - zi) / n for ci, zi in zip(c, z))

    def check_add(out):
        assert float(out[0][0, 0]) == n + 1, out

    progs = {"chain": chain_program(n), "chain0": chain_program(0), "fixed": chain_program(0, with_y=False)}
    feeds = {"chain": {"x": one, "y": one}, "chain0": {"x": one, "y": one}, "fixed": {"x": one}}
    time_chains(progs, feeds, (None,) + TRACE_MODES, "kc", check_add)

    # the scale chain: h = scale(h) against np.multiply(h, s) with a prebuilt float32 scalar
    s32 = np.float32(SCALE)

    def numpy_scale_chain():
        h = one
        for _ in range(n):
            h = np.multiply(h, s32)
        return h
    r["numpy_scale"] = us(measure(numpy_scale_chain, **opts), n)

    def check_scale(out):
        np.testing.assert_allclose(out[0], numpy_scale_chain(), rtol=1e-5)

    sprogs = {"chain": chain_program(n, op="scale"), "chain0": chain_program(0, op="scale")}
    time_chains(sprogs, feeds, (None, DEFAULT_RETAIN), "kc_scale", check_scale)

    # MLP at batch 256
    r["mlp_stand_ins"] = ensure_mlp_ops()
    prog, prob = mlp_program()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, MLP_DIMS[0]), dtype=np.float32)
    params = [((rng.standard_normal((i, o), dtype=np.float32) / np.sqrt(i)).astype(np.float32),
               np.zeros(o, np.float32) + 0.01) for i, o in zip(MLP_DIMS, MLP_DIMS[1:])]
    scope = kc.Scope()
    for i, (w, b) in enumerate(params):
        scope.set(f"w{i}", w)
        scope.set(f"b{i}", b)
    got = exe.run(prog, feed={"x": x}, fetch_list=[prob], scope=scope)[0]
    np.testing.assert_allclose(got, numpy_mlp(x, params), rtol=1e-5, atol=1e-6)
    r["mlp_ops"] = [op.type for op in prog.global_block().ops]
    fns = {"numpy": lambda: numpy_mlp(x, params),
           "numpy_kept": lambda: numpy_mlp(x, params, keep=True),
           "kernels": mlp_kernels_only(exe, prog, x, params),
           "kc": lambda: exe.run(prog, feed={"x": x}, fetch_list=[prob], scope=scope)}
    fns = {k: f for k, f in fns.items() if f is not None}
    # In turn, a few calls of each at a time, many times: load on a shared machine (and NumPy's BLAS
    # threads fighting it, which can slow a matmul 10-50x for a moment) falls on all rows alike,
    # and the best of many short windows is one the load left alone.
    for k, pair in zip(fns, measure_interleaved(list(fns.values()), repeat=a.repeat * 8, min_s=0.002)):
        r[f"mlp_{k}"] = us(pair)

    # (d) PyTorch eager, imported last so its thread pools cannot touch the NumPy figures
    try:
        import torch
    except ImportError:
        r["torch"] = None
    else:
        r["torch_version"] = torch.__version__
        t1 = torch.ones((1, 1), dtype=torch.float32)

        def torch_chain():
            h = t1
            for _ in range(n):
                h = torch.add(h, t1)
            return h
        assert float(torch_chain()[0, 0]) == n + 1
        r["torch"] = us(measure(torch_chain, **opts), n)

    # (e) Paddle's legacy static Executor, in its own venv
    r["paddle"] = None
    if a.paddle and PADDLE_PY.exists():
        cmd = [str(PADDLE_PY), str(HERE / "_paddle_chain.py"), "--ops", str(n), "--repeat", str(a.repeat),
               "--min-s", str(a.min_s)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "FLAGS_enable_pir_api": "0", "GLOG_minloglevel": "2"})
        if p.returncode == 0:
            r["paddle"] = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            r["paddle_error"] = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    elif a.paddle:
        r["paddle_error"] = f"{PADDLE_PY.parent.parent} not found"
    return r


# -- the table ------------------------------------------------------------------------------------
def mark(value: float, target: float) -> str:
    return "met" if value <= target else "NOT met"


def report(r: dict, a) -> str:
    n = r["ops"]
    L = []
    torch_v = r.get("torch_version", "absent")
    paddle_v = r["paddle"]["paddle"] if r["paddle"] else "absent"
    L.append(f"machine:  {machine()}")
    L.append(f"versions: Python {platform.python_version()}, NumPy {np.__version__}, kernelcore {kc.__version__}, "
             f"PyTorch {torch_v}, Paddle {paddle_v}")
    L.append(f"timing:   warm-up, then best and median of {a.repeat} repeats of >= {a.min_s:g} s each (kernelcore's "
             f"chain rows: {a.repeat * 3} windows of >= {a.min_s / 3:g} s, every row of a chain in turn); "
             f"gc on{'; QUICK MODE: figures are rough' if a.quick else ''}")
    L.append(f"load:     1-min load average {r['load'][0]:.2f} at start, {r['load'][1]:.2f} at end "
             f"(other processes share these cores; best-of figures resist that, medians less)")
    L.append("")
    off = r["kc:off"][0]
    numpy = r["numpy"][0]
    L.append(f"Per op: chain of {n} elementwise_add on [1,1] float32 (h = h + y)")
    head = (f"  {'':50s} {'µs/op':>7s} {'median':>7s} {'run/%d' % n:>7s} {'÷NumPy':>7s} {'kc-off÷it':>9s}"
            f"  target")
    L.append(head)

    def row(label, pair, run_pair=None, target=None, baseline=False):
        if pair is None:
            L.append(f"  {label:50s} {'—':>7s}")
            return
        whole = f"{run_pair[0] / n:7.2f}" if run_pair else f"{'':7s}"
        ratio_kc = f"{off / pair[0]:9.2f}" if baseline else f"{'':9s}"
        tgt = f"  ≤ {target:g}× NumPy  {mark(pair[0] / numpy, target)}" if target is not None else ""
        L.append(f"  {label:50s} {pair[0]:7.2f} {pair[1]:7.2f} {whole} {pair[0] / numpy:7.2f} {ratio_kc}{tgt}")

    row("(a) NumPy, np.add in a Python loop", r["numpy"], baseline=True)
    row("(a') kernelcore's add kernel called directly", r["kernel"], baseline=True)
    row("(b) kernelcore, tracing off", r["kc:off"], r["kc:off:chain"], TARGET_OFF_RATIO)
    for mode in TRACE_MODES:
        row(f'(c) kernelcore, kc.trace(retain="{mode}")', r[f"kc:{mode}"], r[f"kc:{mode}:chain"])
    row(f"(d) PyTorch eager torch.add (CPU) {'' if r['torch'] else '[not installed]'}", r["torch"],
        baseline=True)
    p = r["paddle"]
    if p:
        row("(e) Paddle legacy static Executor", us(p["per_op_s"]), us(p["run_s"]["chain"]), baseline=True)
    else:
        L.append(f"  {'(e) Paddle legacy static Executor':50s} {'—':>7s}  ({r.get('paddle_error', 'skipped')})")
    L.append("  kernelcore/Paddle µs/op = (chain run - same program with no ops) / %d; run/%d = whole run / %d"
             % (n, n, n))
    L.append("")

    ns, so, st = r["numpy_scale"], r["kc_scale:off"], r[f"kc_scale:{DEFAULT_RETAIN}"]
    L.append(f"Per op: chain of {n} scale on [1,1] float32 (h = {SCALE} * h)")
    L.append(f"  {'':50s} {'µs/op':>7s} {'median':>7s} {'÷NumPy':>7s}")
    for label, pair in (("NumPy, np.multiply(h, float32 scalar) in a loop", ns), ("kernelcore, tracing off", so),
                        (f'kernelcore, kc.trace(retain="{DEFAULT_RETAIN}")', st)):
        L.append(f"  {label:50s} {pair[0]:7.2f} {pair[1]:7.2f} {pair[0] / ns[0]:7.2f}")
    L.append("")

    L.append("Fixed cost of a run: feed one [1,1] var, fetch it, no ops")
    L.append(f"  {'':50s} {'µs/run':>7s} {'median':>7s}  target")
    fx = r["kc:off:fixed"]
    L.append(f"  {'kernelcore, tracing off':50s} {fx[0]:7.2f} {fx[1]:7.2f}")
    for mode in TRACE_MODES:
        f = r[f"kc:{mode}:fixed"]
        L.append(f"  {f'kernelcore, kc.trace(retain={mode!r}) per run':50s} {f[0]:7.2f} {f[1]:7.2f}")
    if p:
        f = us(p["fixed_s"])
        L.append(f"  {'Paddle legacy static Executor':50s} {f[0]:7.2f} {f[1]:7.2f}  (kernelcore ÷ it: "
                 f"{fx[0] / f[0]:.2f})")
    L.append("")

    L.append("MLP 784-256-256-10, batch 256, float32: %s" % " ".join(r["mlp_ops"]))
    L.append("  (timed in turn: many short windows of each row alternate, so machine load falls on all alike)")
    L.append(f"  {'':50s} {'ms/run':>7s} {'median':>7s} {'÷NumPy':>7s}  target")
    mn, mk = r["mlp_numpy"], r["mlp_kc"]
    ratio = mk[0] / mn[0]
    rows = [("numpy", "NumPy, the same math"),
            ("numpy_kept", "NumPy, every intermediate kept (as a scope does)"),
            ("kernels", "kernelcore's kernels in a plain loop, no executor"),
            ("kc", "kernelcore Executor.run, tracing off")]
    for key, label in rows:
        v = r.get(f"mlp_{key}")
        if v is None:
            L.append(f"  {label:50s} {'—':>7s}")
            continue
        tgt = f"  ≤ {TARGET_MLP:g}  {mark(ratio, TARGET_MLP)}" if key == "kc" else ""
        L.append(f"  {label:50s} {v[0] / 1e3:7.3f} {v[1] / 1e3:7.3f} {v[0] / mn[0]:7.3f}{tgt}")
    if r["mlp_stand_ins"]:
        L.append(f"  note: kernelcore has no {' / '.join(r['mlp_stand_ins'])} kernel yet; this run used the "
                 f"bench's stand-in (same slots, NumPy body)")
    L.append("")

    L.append("Targets (best-of figures)")
    traced = r[f"kc:{DEFAULT_RETAIN}"][0]
    for label, value, target in (
            ("elementwise_add per op ÷ np.add", off / numpy, TARGET_OFF_RATIO),
            ("scale per op ÷ np.multiply", so[0] / ns[0], TARGET_OFF_RATIO),
            (f"add traced ({DEFAULT_RETAIN}) ÷ untraced", traced / off, TARGET_TRACED_RATIO),
            (f"scale traced ({DEFAULT_RETAIN}) ÷ untraced", st[0] / so[0], TARGET_TRACED_RATIO),
            ("fixed cost of a run, µs", fx[0], TARGET_FIXED),
            ("MLP kernelcore ÷ NumPy", ratio, TARGET_MLP)):
        L.append(f"  {label:38s} {value:7.2f}  ≤ {target:g}  {mark(value, target)}")
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: 3 very short repeats per figure")
    ap.add_argument("--ops", type=int, default=200, help="ops in the chain (200)")
    ap.add_argument("--repeat", type=int, default=None, help="repeats per figure (15; quick: 3)")
    ap.add_argument("--no-paddle", dest="paddle", action="store_false", help="skip Paddle's executor")
    ap.add_argument("--json", type=Path, help="also write the raw figures (µs) here")
    a = ap.parse_args(argv)
    # many short repeats: on a shared machine the best of them is the one least disturbed
    a.repeat = a.repeat or (3 if a.quick else 15)
    a.min_s = 0.01 if a.quick else 0.05
    load0 = os.getloadavg()[0]
    r = bench_all(a)
    r["load"] = (load0, os.getloadavg()[0])
    print(report(r, a))
    if a.json:
        a.json.write_text(json.dumps(r, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
