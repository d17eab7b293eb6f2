"""Paddle writes one small program per call site of its public API (api_sweep_table.py) and records what it computes.

    api_sweep_gen.py OUTDIR [--subset K] [--only NAME ...]

Run inside a Paddle venv. The format is the process's: Paddle 2.6.2, or 3.3.1 with FLAGS_enable_pir_api=0, write
legacy programs (`<site>.pdmodel`); 3.3.1 by default writes PIR (`<site>.json`); both with `<site>.pdiparams`
where the call made parameters. Per site also `<site>.npz`: the feeds under their names, Paddle's outputs as
`out/<i>`, and for a differentiable call the random weights `w/<i>` of its float outputs and the gradients
`grad/<feed>` of sum(out_i * w_i) w.r.t. each float feed (paddle.static.gradients with target_gradients, in the
same program and run). `manifest.json` lists every entry: built (with the op types written), cannot_build (with
Paddle's error), no_ops, not-ops. `--subset K` keeps the entries whose name hashes to 0 mod K. Some calls crash
Paddle itself: entries are appended to `records.jsonl` as they finish, and a rerun resumes after the entry a
crash stopped in (recorded as cannot_build); api_sweep.py reruns until the manifest is written.
"""
from __future__ import annotations

import json
import os
import re
import sys
import warnings
import zlib

if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])
warnings.filterwarnings("ignore")
os.environ.setdefault("GLOG_minloglevel", "2")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.enable_static()  # before the table's import: Paddle decides some dispatch at import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_sweep_table as table  # noqa: E402

PIR = bool(getattr(paddle.framework, "use_pir_api", lambda: False)())
# inputs outside (-1, 1) or away from 0 for the functions whose domain asks for it
POSITIVE = {"log", "log2", "log10", "log1p", "sqrt", "rsqrt", "lgamma", "digamma", "polygamma", "multigammaln",
            "gammaln", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e", "reciprocal", "pow", "logit", "bucketize"}
ABOVE_ONE = {"acosh"}


class Feeds:
    """Makes a call's inputs: a static data variable each, with the array that will be fed to it."""

    def __init__(self, rng, low=-1.0, high=1.0):
        self.rng, self.low, self.high = rng, low, high
        self.vars, self.arrays = [], {}

    def _data(self, arr):
        name = f"x{len(self.vars)}"
        v = paddle.static.data(name, list(arr.shape), str(arr.dtype))
        if arr.dtype.kind == "f":
            v.stop_gradient = False
        self.vars.append(v)
        self.arrays[name] = arr
        return v

    def tensor(self, dtype, shape):
        if dtype == "bool":
            return self._data(self.rng.random(shape) < 0.5)
        if dtype.startswith("int"):
            return self._data(self.rng.integers(1, 5, shape).astype(dtype))
        return self._data(self.rng.uniform(self.low, self.high, shape).astype(dtype))

    def ints(self, shape, high):
        return self._data(self.rng.integers(0, high, shape).astype("int64"))

    def distinct(self, shape, high):
        return self._data(self.rng.permutation(high)[:shape[0]].astype("int64"))

    def const_ints(self, values):
        return self._data(np.asarray(values, dtype="int32"))

    def positive(self, shape):
        return self._data(self.rng.uniform(0.5, 1.5, shape).astype("float32"))

    def unit(self, shape):
        return self._data(self.rng.uniform(0.05, 0.95, shape).astype("float32"))

    def sorted_values(self, shape):
        return self._data(np.sort(self.rng.uniform(-1, 1, shape)).astype("float32"))

    def well_conditioned(self, n):
        return self._data((self.rng.uniform(-0.5, 0.5, (n, n)) + n * np.eye(n)).astype("float32"))

    def spd(self, n):
        a = self.rng.uniform(-0.5, 0.5, (n, n))
        return self._data((a @ a.T + n * np.eye(n)).astype("float32"))

    def boxes(self, n, size):
        lo = self.rng.uniform(0, size / 2, (n, 2))
        return self._data(np.concatenate([lo, lo + self.rng.uniform(1, size / 2, (n, 2))], 1).astype("float32"))


class NoOps(Exception):
    pass


def _tensors(out):
    """The output's tensors in order (tuples and lists flattened; Python values dropped)."""
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    if hasattr(out, "shape") and hasattr(out, "dtype") and not isinstance(out, np.ndarray):
        return [out]
    return []


def _name(value):
    try:  # a PIR value has a name only where a data or parameter op made it
        return value.name
    except Exception:
        return None


def _op_types(program):
    if PIR:
        return [op.name() for op in program.global_block().ops]
    return [op.type for b in program.blocks for op in b.ops]


def _is_float(arr):
    return arr.dtype.kind == "f"


def domain(name):
    if name in ABOVE_ONE:
        return 1.2, 2.0
    if name in POSITIVE:
        return 0.2, 1.0
    return -1.0, 1.0


def _unique(outs):
    """The outputs with repeats dropped (an RNN cell returns its new state twice, as output and as state)."""
    kept = []
    for o in outs:
        if not any(o is k or (_name(o) is not None and _name(o) == _name(k)) for k in kept):
            kept.append(o)
    return kept


def build(call, prefix, name, seed):
    """Build, save, run and differentiate one candidate call; returns its manifest record (raises if Paddle
    cannot build or run it). The outputs are those of the saved program as Paddle reloads it (the inference form
    may differ from the built one: batch norm's statistics, dropout); the gradients are the built program's."""
    rng = np.random.default_rng(seed)
    paddle.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    feeds = Feeds(rng, *domain(name))
    with paddle.static.program_guard(main, startup):
        outs = _unique(_tensors(call(feeds)))
    ops = [t for t in _op_types(main) if t not in ("feed", "pd_op.data", "pd_op.feed", "data")]
    feed_names = set(feeds.arrays)
    if not outs or not ops or all(_name(o) in feed_names for o in outs):
        raise NoOps()
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        paddle.static.save_inference_model(prefix, feeds.vars, outs, exe, program=main)
        saved, saved_feeds, saved_fetches = paddle.static.load_inference_model(prefix, exe)
        results = exe.run(saved, feed={n: feeds.arrays[n] for n in saved_feeds}, fetch_list=saved_fetches)
        record = {"ops": ops, "feeds": list(feeds.arrays), "outputs": len(outs),
                  "out_dtypes": [str(r.dtype) for r in results], "grad_of": [], "grad_outputs": []}
        arrays = dict(feeds.arrays)
        arrays.update({f"out/{i}": r for i, r in enumerate(results)})
        if not PIR:  # the program as built, for kernelcore's gradients (the saved one lost what backward reads)
            with open(prefix + ".fwd.pb", "wb") as fh:
                fh.write(main.desc.serialize_to_string())
            record["out_names"] = [o.name for o in outs]
        if name not in table.RANDOM:  # a random op's draws differ between any two runs
            try:
                arrays.update(differentiate(main, startup, exe, feeds, outs, rng, record, arrays))
            except Exception as e:  # Paddle has no gradient for it: the call is not differentiable here
                record["grad_error"] = _short(e)
    np.savez(prefix + ".npz", **arrays)
    return record


def differentiate(main, startup, exe, feeds, outs, rng, record, arrays):
    """Gradients of sum(out_i * w_i) over the float outputs, w.r.t. the float feeds, in the built program."""
    results = exe.run(main, feed=feeds.arrays, fetch_list=outs)
    float_outs = [i for i, r in enumerate(results) if _is_float(r)]
    float_ins = [v for v in feeds.vars if _is_float(feeds.arrays[v.name])]
    if not float_outs or not float_ins:
        return {}
    weights = {f"w/{i}": rng.uniform(-1, 1, results[i].shape).astype(results[i].dtype) for i in float_outs}
    with paddle.static.program_guard(main, startup):
        wvars = [paddle.static.data(f"w{i}", list(results[i].shape), str(results[i].dtype)) for i in float_outs]
        gvars = paddle.static.gradients([outs[i] for i in float_outs], float_ins, target_gradients=wvars)
    pairs = [(v.name, g) for v, g in zip(float_ins, gvars) if g is not None]
    if not pairs:
        return {}
    feed = dict(feeds.arrays)
    feed.update({f"w{i}": weights[f"w/{i}"] for i in float_outs})
    got = exe.run(main, feed=feed, fetch_list=[g for _, g in pairs])
    record["grad_of"] = [n for n, _ in pairs]
    record["grad_outputs"] = float_outs
    grads = dict(weights)
    grads.update({f"grad/{n}": np.asarray(g) for (n, _), g in zip(pairs, got)})
    return grads


def _short(e):
    text = f"{type(e).__name__}: {e}".strip()
    text = re.sub(r"\s+", " ", text)
    for marker in (" [Hint:", " (at /", "----"):
        if marker in text:
            text = text[:text.index(marker)]
    return text[:300]


def safe(site_id):
    return re.sub(r"[^A-Za-z0-9_.=-]", "_", site_id)


def sweep_entry(out, qualname, name, kind, sites, seed):
    records = []
    if kind == "not-ops":
        return [{"function": qualname, "kind": kind, "variant": "", "status": "not-ops"}]
    if not any(calls for _, calls in sites):
        return [{"function": qualname, "kind": kind, "variant": "", "status": "cannot_build",
                 "error": "the sweep has no call for its signature"}]
    for variant, calls in sites:
        site_id = qualname + (f"[{variant}]" if variant else "")
        rec = {"function": qualname, "kind": kind, "variant": variant, "id": site_id, "file": safe(site_id),
               "random": name in table.RANDOM}
        first_error = None
        for call in calls:
            try:
                rec.update(build(call, os.path.join(out, rec["file"]), name, seed), status="built")
                break
            except NoOps:
                rec.update(status="no_ops")
                break
            except Exception as e:
                first_error = first_error or _short(e)
        else:
            rec.update(status="cannot_build", error=first_error or "no call")
        records.append(rec)
        if not variant and rec["status"] != "built":
            break  # the variants are of a call that builds
    return records


def _done(out):
    """Records of a run a crash stopped: the entries done, and the one it was on (Paddle crashed in it)."""
    done, path = {}, os.path.join(out, "records.jsonl")
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    done.setdefault(rec["function"], []).append(rec)
    current = os.path.join(out, "current")
    if os.path.exists(current):
        with open(current) as fh:
            name = fh.read().strip()
        if name and name not in done:
            done[name] = [{"function": name, "kind": "function", "variant": "", "status": "cannot_build",
                           "error": "Paddle crashed or hung building or running it (its process died or was "
                                    "stopped)"}]
            _append(out, done[name])
    return done


def _append(out, records):
    with open(os.path.join(out, "records.jsonl"), "a") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")


def main(argv):
    out = argv[0]
    subset = int(argv[argv.index("--subset") + 1]) if "--subset" in argv else 1
    only = set(argv[argv.index("--only") + 1:]) if "--only" in argv else None
    os.makedirs(out, exist_ok=True)
    done = _done(out)
    entries = [e for e in table.all_entries()
               if (only is None or e[0] in only) and zlib.crc32(e[0].encode()) % subset == 0]
    try:
        from tqdm import tqdm
        entries_iter = tqdm(entries, desc=f"api sweep ({paddle.__version__})", unit="fn", file=sys.stderr,
                            mininterval=2, initial=0)
    except ImportError:
        entries_iter = entries
    records = []
    for qualname, name, kind, sites in entries_iter:
        if qualname in done:
            records.extend(done[qualname])
            continue
        with open(os.path.join(out, "current"), "w") as fh:
            fh.write(qualname)
            fh.flush()
            os.fsync(fh.fileno())
        recs = sweep_entry(out, qualname, name, kind, sites, zlib.crc32(qualname.encode()))
        _append(out, recs)
        records.extend(recs)
    os.remove(os.path.join(out, "current"))
    manifest = {"paddle": paddle.__version__, "format": "pir" if PIR else "legacy", "records": records}
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=0)


if __name__ == "__main__":
    main(sys.argv[1:])
