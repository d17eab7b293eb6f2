"""Paddle Inference's CPU predictor on PIR programs (`.json` + `.pdiparams`); run with Paddle 3's python.

    .venv-paddle/bin/python bench/_pir_paddle.py DIR THREADS NAME [NAME ...]

For every NAME and every thread count in THREADS (comma-separated) it makes two predictors on DIR/NAME.json with
oneDNN off: ir_optim off (the program as saved, op for op: what kernelcore runs) and ir_optim on (Paddle's fused
passes), each with set_cpu_math_library_num_threads(n), fed DIR/NAME.npz's arrays. A timed run is predictor.run()
and the outputs copied out, as kernelcore's run returns arrays. It warms each predictor up, compares its outputs with
the generator's (those of an ir_optim-off predictor), prints one JSON line {"paddle": version, "ready": [keys],
"max_rel_diff": {key: ...}}, then serves "KEY COUNT [WARM_S]" lines (bench/_timed_runs.py), KEY being
"NAME:off:N" or "NAME:on:N".
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.pop("FLAGS_enable_pir_api", None)  # Paddle 3's default (PIR): the predictor reads .json
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
from paddle import inference  # noqa: E402
import paddle  # noqa: E402

from _timed_runs import serve  # noqa: E402


def make_predictor(prefix: str, ir_optim: bool, threads: int):
    config = inference.Config(prefix + ".json", prefix + ".pdiparams")
    config.disable_gpu()
    config.disable_mkldnn()
    config.switch_ir_optim(ir_optim)
    config.set_cpu_math_library_num_threads(threads)
    config.disable_glog_info()
    return inference.create_predictor(config)


def runner(pred, feeds: dict):
    """run(): one predictor run on copies of `feeds` taken once (copy_from_cpu is input setup, not the run)."""
    for name, arr in feeds.items():
        pred.get_input_handle(name).copy_from_cpu(arr)
    outputs = [pred.get_output_handle(n) for n in pred.get_output_names()]

    def run():
        pred.run()
        return [o.copy_to_cpu() for o in outputs]
    return run


def rel_diff(got: list, want: list) -> float:
    return max(float(np.abs(g - w).max() / max(float(np.abs(w).max()), 1e-30)) for g, w in zip(got, want))


def main() -> None:
    outdir, threads, names = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], sys.argv[3:]
    runs, diffs = {}, {}
    for name in names:
        prefix = os.path.join(outdir, name)
        data = np.load(prefix + ".npz")
        meta = json.load(open(prefix + ".meta.json"))
        feeds = {n: data[n] for n in meta["feed_names"]}
        want = [data[f"fetch_{i}"] for i in range(len(meta["fetch_names"]))]
        for n in threads:
            for mode in ("off", "on"):
                run = runner(make_predictor(prefix, mode == "on", n), feeds)
                outs = [run() for _ in range(3)][-1]
                key = f"{name}:{mode}:{n}"
                diffs[key] = rel_diff(outs, want)
                runs[key] = (None, run)
    print(json.dumps({"paddle": paddle.__version__, "ready": list(runs), "max_rel_diff": diffs}), flush=True)
    serve(runs)


if __name__ == "__main__":
    main()
