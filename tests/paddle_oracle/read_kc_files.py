"""Make PaddlePaddle 3.3.1 (legacy IR) read files that kernelcore wrote, for the parity tests.

    read_kc_files.py infer  PREFIX FEEDS.npz OUT.npz
        paddle.static.load_inference_model(PREFIX) and run it on the feeds (keys = feed names);
        writes fetch_0, fetch_1, ... and `feed_names` / `fetch_names` (string arrays) to OUT.npz.
    read_kc_files.py params FILE SPEC.json OUT.npz
        read a combined parameter file with Paddle's own `load_combine` op; SPEC.json lists
        [[name, dtype, shape], ...] in file order; writes the loaded tensors to OUT.npz by name.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
os.environ.setdefault("GLOG_minloglevel", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.enable_static()


def infer(prefix, feeds_path, out_path):
    feeds = dict(np.load(feeds_path))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
        outs = exe.run(prog, feed={n: feeds[n] for n in feed_names}, fetch_list=fetch_targets)
    arrays = {f"fetch_{i}": np.asarray(o) for i, o in enumerate(outs)}
    arrays["feed_names"] = np.array(list(feed_names))
    arrays["fetch_names"] = np.array([v.name for v in fetch_targets])
    np.savez(out_path, **arrays)


def params(file, spec_path, out_path):
    from paddle.base import core

    with open(spec_path) as f:
        spec = json.load(f)
    prog = paddle.static.Program()
    block = prog.global_block()
    out_vars = [block.create_var(name=n, shape=shape, dtype=dtype, persistable=True) for n, dtype, shape in spec]
    block.append_op(type="load_combine", inputs={}, outputs={"Out": out_vars},
                    attrs={"file_path": os.path.abspath(file)})
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        paddle.static.Executor(paddle.CPUPlace()).run(prog)
        arrays = {n: np.array(scope.find_var(n).get_tensor()) for n, _, _ in spec}
    del core
    np.savez(out_path, **arrays)


def main(argv):
    if len(argv) == 5 and argv[1] == "infer":
        infer(*argv[2:])
    elif len(argv) == 5 and argv[1] == "params":
        params(*argv[2:])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
