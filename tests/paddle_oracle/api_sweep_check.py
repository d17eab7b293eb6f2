"""kernelcore's side of the API sweep: load each program Paddle wrote (api_sweep_gen.py), run it, compare.

`check_dir(directory)` returns one result per built call site of that directory's manifest:
    status    "runs with parity" | "missing op" | "wrong values" (a run that raises is counted here, its error in
              `detail`; so is a program kernelcore cannot open for another reason than a missing op)
    grad      None (Paddle gave no gradient) | "gradient parity" | "missing op" | "wrong gradients" |
              "Paddle's gradient is off" (it differs from central differences of the forward, kernelcore's does not)
    missing   op types kernelcore lacks (the forward's, or the gradient's); `ops` the loaded program's op types
Forward outputs agree to FORWARD_TOL (float32), gradients of sum(out * w) to GRADIENT_TOL, both relative to the
output's own scale; a random function's outputs agree in shape and dtype only.
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np

import kernelcore as kc
from kernelcore.errors import KernelcoreError, LoadError, UnknownOpError
from kernelcore.formats.paddle_files import (feed_target_names, fetch_target_names, load_inference_model,
                                             load_params)
from kernelcore.formats.pir_json import load_pir_program
from kernelcore.formats.pir_ops import CONSTANT_MAKERS, PIR_OPS
from kernelcore.ir.support import unsupported_ops

FORWARD_TOL = 1e-5
GRADIENT_TOL = 1e-4
PARITY, MISSING, WRONG = "runs with parity", "missing op", "wrong values"
GRAD_PARITY, GRAD_WRONG = "gradient parity", "wrong gradients"
PADDLE_GRAD_OFF = "Paddle's gradient is off"  # kernelcore's agrees with finite differences, Paddle's does not
FD_EPS, FD_TOL, FD_MAX_ELEMENTS = 1e-2, 1e-2, 256
PIR_MISSING = re.compile(r"no counterpart for PIR op '([^']+)'")
# what the PIR reader takes apart itself rather than through its table
PIR_STRUCTURE = {"pd_op.if", "pd_op.while", "cf.yield", "builtin.parameter", "pd_op.parameter", "pd_op.data",
                 "pd_op.fetch", "builtin.combine", "builtin.split", "builtin.shadow_output", "pd_op.shadow_output"}


def pir_unmapped(ops) -> list[str]:
    """The PIR ops of a program kernelcore's reader has no counterpart for (it stops at the first)."""
    known = PIR_STRUCTURE | CONSTANT_MAKERS | set(PIR_OPS)
    return sorted({op for op in ops if op not in known})


def load(prefix: Path, fmt: str):
    """(program, scope, feed names, fetch names) of one saved site."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UnsupportedOpsWarning: the sweep asks unsupported_ops itself
        if fmt == "legacy":
            return load_inference_model(prefix)
        prog = load_pir_program(prefix.with_name(prefix.name + ".json"))
        scope = kc.Scope()
        params = prefix.with_name(prefix.name + ".pdiparams")
        for name, arr in (load_params(params, prog) if params.exists() else {}).items():
            scope.set(name, arr)
        return prog, scope, feed_target_names(prog), fetch_target_names(prog)


def op_types(prog) -> list[str]:
    return sorted({op.type for b in prog.desc.blocks for op in b.ops} - {"feed", "fetch"})


def agree(got, want, tol: float) -> str | None:
    """None when `got` is `want` to `tol`, else what differs."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, Paddle's {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, Paddle's {want.dtype}"
    if want.dtype.kind not in "fc":
        return None if np.array_equal(got, want) else "values differ"
    finite = want[np.isfinite(want)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    if np.allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True):
        return None
    err = np.nanmax(np.abs(got.astype(np.float64) - want)) if got.size else 0.0
    return f"max error {err:.3g} (scale {scale:.3g})"


def _short(e: BaseException) -> str:
    return re.sub(r"\s+", " ", f"{type(e).__name__}: {e}")[:240]


def check_site(directory: Path, rec: dict, fmt: str) -> dict:
    res = {"id": rec["id"], "function": rec["function"], "variant": rec["variant"], "grad": None,
           "missing": [], "ops": []}
    with np.load(directory / f"{rec['file']}.npz") as npz:
        data = dict(npz)
    try:
        prog, scope, feeds, fetches = load(directory / rec["file"], fmt)
    except LoadError as e:
        m = PIR_MISSING.search(str(e))
        if m:
            missing = sorted(set(pir_unmapped(rec["ops"])) | {m.group(1)})
            return {**res, "status": MISSING, "missing": missing, "detail": "cannot open"}
        return {**res, "status": WRONG, "detail": "cannot open: " + _short(e)}
    res["ops"] = op_types(prog)
    missing = unsupported_ops(prog)
    if missing:
        return {**res, "status": MISSING, "missing": [u.type for u in missing]}
    res.update(forward(prog, scope, feeds, fetches, data, rec))
    if res["status"] == PARITY and rec.get("grad_of"):
        res.update(backward(directory, prog, scope, feeds, fetches, data, rec))
    return res


def forward(prog, scope, feeds, fetches, data, rec) -> dict:
    try:
        outs = kc.Executor().run(prog, feed={n: data[n] for n in feeds}, fetch_list=fetches, scope=scope)
    except UnknownOpError as e:
        return {"status": MISSING, "missing": [u.type for u in getattr(e, "unsupported", ())], "detail": _short(e)}
    except Exception as e:  # noqa: BLE001 - any failure of a run is reported, with its type
        return {"status": WRONG, "detail": "raises " + _short(e)}
    for i, got in enumerate(outs):
        want = data[f"out/{i}"]
        if rec.get("random"):
            got = np.asarray(got)
            diff = None if (got.shape, got.dtype) == (want.shape, want.dtype) else \
                f"shape/dtype {list(got.shape)} {got.dtype}, Paddle's {list(want.shape)} {want.dtype}"
        else:
            diff = agree(got, want, FORWARD_TOL)
        if diff:
            return {"status": WRONG, "detail": f"output {i}: {diff}"}
    return {"status": PARITY, "detail": ""}


def gradient_program(directory: Path, rec: dict, prog, fetches):
    """(program, names of its outputs) to differentiate: the legacy program as Paddle built it (its inference form
    dropped what backward reads, such as transpose2's XShape and dropout's Mask), else the loaded one."""
    fwd = directory / f"{rec['file']}.fwd.pb"
    if fwd.exists():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # UnsupportedOpsWarning: the run says which op is missing
            return kc.Program.from_bytes(fwd.read_bytes(), source=str(fwd)), rec["out_names"]
    return prog, fetches


def backward(directory, prog, scope, feeds, fetches, data, rec) -> dict:
    """kc.gradients of sum(out_i * w_i) (w_i as the target gradients), run in training mode."""
    try:
        prog, names = gradient_program(directory, rec, prog, fetches)
        block = prog.global_block()
        targets = [block.var(names[i]) for i in rec["grad_outputs"]]
        weights = []
        for i in rec["grad_outputs"]:
            w = data[f"w/{i}"]
            weights.append(block.create_var(f"sweep_w{i}", list(w.shape), str(w.dtype), stop_gradient=True))
            scope.set(f"sweep_w{i}", w)  # the program feeds only its feed ops' names: the weights wait here
        grads = kc.gradients(targets, [block.var(n) for n in rec["grad_of"]], target_gradients=weights)
        pairs = [(n, g) for n, g in zip(rec["grad_of"], grads) if g is not None]
        got = kc.Executor().run(prog, feed={n: data[n] for n in rec["feeds"]},
                                fetch_list=[g.name for _, g in pairs], scope=scope, training=True)
    except UnknownOpError as e:
        return {"grad": MISSING, "missing": [u.type for u in getattr(e, "unsupported", ())],
                "grad_detail": _short(e)}
    except KernelcoreError as e:
        if type(e).__name__ == "NoGradientError":
            return {"grad": MISSING, "grad_detail": _short(e)}
        return {"grad": GRAD_WRONG, "grad_detail": "raises " + _short(e)}
    except Exception as e:  # noqa: BLE001
        return {"grad": GRAD_WRONG, "grad_detail": "raises " + _short(e)}
    given = {n for n, _ in pairs}
    for n in rec["grad_of"]:
        if n not in given:
            return {"grad": GRAD_WRONG, "grad_detail": f"no gradient for {n}"}
    for (n, _), g in zip(pairs, got):
        diff = agree(g, data[f"grad/{n}"], GRADIENT_TOL)
        if diff:
            return arbitrate(directory, rec, prog, fetches, scope, data, n, g, diff)
    return {"grad": GRAD_PARITY, "grad_detail": ""}


def arbitrate(directory, rec, prog, fetches, scope, data, wrt, got, diff) -> dict:
    """kernelcore's gradient differs from Paddle's: central differences of kernelcore's forward (whose outputs
    are Paddle's) say which is off, where the input is small enough to ask."""
    wrong = {"grad": GRAD_WRONG, "grad_detail": f"d/d{wrt}: {diff}"}
    if data[wrt].size > FD_MAX_ELEMENTS:
        return wrong
    fwd, names = gradient_program(directory, rec, prog, fetches)
    numeric = numeric_gradient(fwd, [names[i] for i in rec["grad_outputs"]], scope, data, rec, wrt)
    paddle_off = agree(data[f"grad/{wrt}"].astype(np.float64), numeric, FD_TOL)
    if paddle_off and agree(np.asarray(got, np.float64), numeric, FD_TOL) is None:
        return {"grad": PADDLE_GRAD_OFF, "grad_detail": f"d/d{wrt}: Paddle's differs from finite differences "
                                                        f"({paddle_off}); kernelcore's agrees with them"}
    return wrong


def numeric_gradient(prog, outputs, scope, data, rec, wrt) -> np.ndarray:
    """d sum(out_i * w_i) / d wrt by central differences, through kernelcore's forward run in training mode."""
    feed = {n: data[n] for n in rec["feeds"]}
    weights = [data[f"w/{i}"] for i in rec["grad_outputs"]]

    def objective(x):
        outs = kc.Executor().run(prog, feed={**feed, wrt: x}, fetch_list=outputs, scope=scope, training=True)
        return sum(float(np.sum(np.asarray(o, np.float64) * w)) for o, w in zip(outs, weights))
    x = data[wrt]
    grad = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += FD_EPS
        down[idx] -= FD_EPS
        grad[idx] = (objective(up) - objective(down)) / (2 * FD_EPS)
    return grad


def check_dir(directory: Path, progress=None) -> tuple[dict, list[dict]]:
    """(manifest, results of its built sites)."""
    manifest = json.loads((directory / "manifest.json").read_text())
    fmt = manifest["format"]
    results = []
    for rec in manifest["records"]:
        if rec["status"] == "built":
            results.append(check_site(directory, rec, fmt))
        if progress:
            progress()
    return manifest, results
