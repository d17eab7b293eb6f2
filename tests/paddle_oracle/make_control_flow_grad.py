"""Paddle 2.6.2 differentiates control flow: recurrent and cond programs with Paddle's own append_backward.

    .venv-paddle2/bin/python tests/paddle_oracle/make_control_flow_grad.py OUTDIR

Per case: `<case>.fwd.pb` (the forward program, before append_backward), `<case>.pb` (with Paddle's
recurrent_grad / conditional_block_grad / select_output ops and their grad sub-blocks), `<case>.npz` (feeds,
`persist/<name>`, `fetch_i` = loss then the gradients, computed by Paddle), `<case>.runN.npz` for extra runs,
`<case>.json` (feed/fetch names, blocks, the whole ProgramDesc as MessageToDict without op_callstack).

Cases:
  recurrent_grad, recurrent_grad_reverse   h_t = tanh(x_t W + h_{t-1} U) (block API, assign copies for the state
                                           and the output, as make_control_flow.py builds it), T=4;
                                           loss = mean(outputs * wt); fetch loss, x@GRAD, h0@GRAD, rnn_w@GRAD,
                                           rnn_u@GRAD
  cond_grad                                a = cond(0 < mean(p), exp(x)*2 + y, x*y); loss = mean(a * wt); runs
                                           p=0.5 (true) and p=-0.5 (false); fetch loss, x@GRAD, y@GRAD
  while_grad                               h = x; 3 times h = tanh(h * w + x) (while_loop); loss = mean(h * wt);
                                           fetch loss, x@GRAD, w@GRAD (Paddle's are right: checked here)

The recurrent gradients Paddle computes are NOT the true gradients: Paddle's append_backward builds the step
grad block only from the ops on the path to the step outputs, so the state's own assign is left out and the
memory gradient is lost. The script says so (it prints the largest error against float64 finite differences);
the files record what Paddle's runtime computes from Paddle's program, which is what a compatible engine must
reproduce from that program.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

if os.environ.get("PYTHONHASHSEED") != "0":  # Paddle's cond gathers Input/Out in sets: pin their order
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from paddle.base import core  # noqa: E402
from paddle.base.proto import framework_pb2  # noqa: E402

paddle.enable_static()
SEED = 20261122
T, B, D, H = 4, 2, 3, 4


def program_dict(program):
    desc = framework_pb2.ProgramDesc.FromString(program.desc.serialize_to_string())
    for b in desc.blocks:
        for op in b.ops:
            keep = [a for a in op.attrs if a.name != "op_callstack"]
            del op.attrs[:]
            op.attrs.extend(keep)
    return json_format.MessageToDict(desc)


def _recurrent(reverse):
    main = paddle.static.default_main_program()
    parent = main.current_block()
    x = paddle.static.data("x", [T, B, D], "float32")
    h0 = paddle.static.data("h0", [B, H], "float32")
    wt = paddle.static.data("wt", [T, B, H], "float32")
    x.stop_gradient = h0.stop_gradient = False
    init = paddle.nn.initializer.Normal(0.0, 0.5)
    w = paddle.static.create_parameter([D, H], "float32", name="rnn_w", default_initializer=init)
    u = paddle.static.create_parameter([H, H], "float32", name="rnn_u", default_initializer=init)
    blk = main._create_block()
    x_t = blk.create_var(name=x.name, shape=[B, D], dtype="float32")
    h_prev = blk.create_var(name="rnn@mem", shape=[B, H], dtype="float32")
    h = paddle.tanh(paddle.matmul(x_t, w) + paddle.matmul(h_prev, u))
    h_state = paddle.assign(h)
    h_out = paddle.assign(h)
    main._rollback()
    out = parent.create_var(name=h_out.name, shape=[T, B, H], dtype="float32")
    step_scopes = parent.create_var(name="rnn_step_scopes", type=core.VarDesc.VarType.STEP_SCOPES)
    parent.append_op(type="recurrent", inputs={"inputs": [x], "initial_states": [h0], "parameters": [w, u]},
                     outputs={"outputs": [out], "step_scopes": [step_scopes]},
                     attrs={"has_states": True, "ex_states": [h_prev.name], "states": [h_state.name],
                            "sub_block": blk, "reverse": reverse})
    loss = paddle.mean(out * wt)
    rng = np.random.default_rng(31 + int(reverse))
    feeds = {"x": rng.standard_normal((T, B, D)).astype("float32"),
             "h0": rng.standard_normal((B, H)).astype("float32"),
             "wt": rng.uniform(0.5, 1.5, (T, B, H)).astype("float32")}
    return loss, ["x", "h0", "wt"], ["x@GRAD", "h0@GRAD", "rnn_w@GRAD", "rnn_u@GRAD"], [feeds]


def build_recurrent_grad():
    return _recurrent(False)


def build_recurrent_grad_reverse():
    return _recurrent(True)


def build_cond_grad():
    x = paddle.static.data("x", [3, 4], "float32")
    y = paddle.static.data("y", [3, 4], "float32")
    p = paddle.static.data("p", [1], "float32")
    wt = paddle.static.data("wt", [3, 4], "float32")
    x.stop_gradient = y.stop_gradient = False
    pred = paddle.less_than(paddle.full([], 0.0, "float32"), paddle.mean(p))  # kernelcore has no greater_than
    a = paddle.static.nn.cond(pred, lambda: paddle.exp(x) * 2.0 + y, lambda: x * y)
    loss = paddle.mean(a * wt)
    rng = np.random.default_rng(33)
    base = {"x": rng.standard_normal((3, 4)).astype("float32"), "y": rng.standard_normal((3, 4)).astype("float32"),
            "wt": rng.uniform(0.5, 1.5, (3, 4)).astype("float32")}
    runs = [dict(base, p=np.array([0.5], "float32")), dict(base, p=np.array([-0.5], "float32"))]
    return loss, ["x", "y", "p", "wt"], ["x@GRAD", "y@GRAD"], runs


def build_while_grad():
    x = paddle.static.data("x", [2, 3], "float32")
    wt = paddle.static.data("wt", [2, 3], "float32")
    x.stop_gradient = False
    init = paddle.nn.initializer.Normal(0.0, 0.8)
    w = paddle.static.create_parameter([3], "float32", name="w", default_initializer=init)
    i = paddle.full([1], 0, "int64")
    n = paddle.full([1], 3, "int64")
    h0 = paddle.scale(x, 1.0)  # copy: while_loop writes its results back into the loop vars themselves

    def body(i, h):
        return [paddle.increment(i), paddle.tanh(h * w + x)]

    _, h = paddle.static.nn.while_loop(lambda i, h: i < n, body, [i, h0])
    loss = paddle.mean(h * wt)
    rng = np.random.default_rng(34)
    feeds = {"x": rng.standard_normal((2, 3)).astype("float32"), "wt": rng.uniform(0.5, 1.5, (2, 3)).astype("float32")}
    return loss, ["x", "wt"], ["x@GRAD", "w@GRAD"], [feeds]


CASES = {"recurrent_grad": build_recurrent_grad, "recurrent_grad_reverse": build_recurrent_grad_reverse,
         "cond_grad": build_cond_grad, "while_grad": build_while_grad}


def rnn_loss(x, h0, w, u, wt, reverse):
    h, out = h0, np.zeros(wt.shape)
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        h = np.tanh(x[t] @ w + h @ u)
        out[t] = h
    return float(np.mean(out * wt))


def fd(fn, a, eps=1e-6):
    g = np.zeros(a.shape)
    for i in np.ndindex(*a.shape):
        ap, am = a.copy(), a.copy()
        ap[i] += eps
        am[i] -= eps
        g[i] = (fn(ap) - fn(am)) / (2 * eps)
    return g


def make_case(outdir, name, builder):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        loss, feed_names, grad_names, runs = builder()
        fwd = main.clone()
        paddle.static.append_backward(loss)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        pnames = sorted(v.name for v in main.list_vars() if v.persistable
                        and v.type == core.VarDesc.VarType.LOD_TENSOR and v.name not in ("feed", "fetch"))
        persist = {n: np.array(scope.find_var(n).get_tensor()) for n in pnames}
        fetch = [loss.name] + grad_names
        results = [exe.run(main, feed=feeds, fetch_list=fetch) for feeds in runs]

    prefix = os.path.join(outdir, name)
    with open(prefix + ".pb", "wb") as f:
        f.write(main.desc.serialize_to_string())
    with open(prefix + ".fwd.pb", "wb") as f:
        f.write(fwd.desc.serialize_to_string())
    run_files = []
    for k, (feeds, outs) in enumerate(zip(runs, results)):
        arrays = dict(feeds)
        arrays.update({f"fetch_{i}": np.asarray(o) for i, o in enumerate(outs)})
        arrays.update({f"persist/{n}": v for n, v in persist.items()})
        fname = f"{name}.npz" if k == 0 else f"{name}.run{k}.npz"
        np.savez(os.path.join(outdir, fname), **arrays)
        run_files.append(fname)

    note = ""
    if name.startswith("recurrent"):
        f64 = {k: v.astype(np.float64) for k, v in runs[0].items()}
        w, u, rev = persist["rnn_w"].astype(np.float64), persist["rnn_u"].astype(np.float64), name.endswith("reverse")
        true = [fd(lambda a: rnn_loss(a, f64["h0"], w, u, f64["wt"], rev), f64["x"]),
                fd(lambda a: rnn_loss(f64["x"], a, w, u, f64["wt"], rev), f64["h0"]),
                fd(lambda a: rnn_loss(f64["x"], f64["h0"], a, u, f64["wt"], rev), w),
                fd(lambda a: rnn_loss(f64["x"], f64["h0"], w, a, f64["wt"], rev), u)]
        errs = [float(np.abs(np.asarray(g) - t).max()) for g, t in zip(results[0][1:], true)]
        note = f"Paddle's gradients vs float64 finite differences, max abs error per grad: {errs}"
    if name == "while_grad":
        f = {k: v.astype(np.float64) for k, v in runs[0].items()}
        w = persist["w"].astype(np.float64)

        def loss_of(x, w):
            h = x
            for _ in range(3):
                h = np.tanh(h * w + x)
            return float(np.mean(h * f["wt"]))
        np.testing.assert_allclose(results[0][1], fd(lambda a: loss_of(a, w), f["x"]), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(results[0][2], fd(lambda a: loss_of(f["x"], a), w), rtol=1e-4, atol=1e-6)
    if name == "cond_grad":
        for feeds, outs in zip(runs, results):
            x, y, wt = (feeds[k].astype(np.float64) for k in ("x", "y", "wt"))
            gx, gy = ((2 * np.exp(x) * wt, wt) if feeds["p"][0] > 0 else (y * wt, x * wt))
            np.testing.assert_allclose(outs[1], gx / x.size, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(outs[2], gy / x.size, rtol=1e-5, atol=1e-6)

    meta = {"case": name, "paddle_version": paddle.__version__, "feed_names": feed_names, "fetch_names": fetch,
            "runs": run_files, "persistables": pnames, "note": note,
            "blocks": [{"idx": b.idx, "parent_idx": b.parent_idx, "forward_block_idx": b.forward_block_idx,
                        "op_types": [op.type for op in b.ops]} for b in main.blocks],
            "program": program_dict(main)}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: " + "; ".join(f"block{b['idx']}<-{b['parent_idx']}: {b['op_types']}" for b in meta["blocks"]))
    if note:
        print(f"  {note}")


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    for name, builder in CASES.items():
        make_case(argv[1], name, builder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
