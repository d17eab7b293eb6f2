"""Build a static program with Paddle, run it once and save it as an inference model with its feeds and fetches:
what the oracle generators of single-program cases share.

Imported by the generators run as scripts (their folder is on sys.path), inside a Paddle environment, after the
generator has chosen legacy mode and called `paddle.enable_static()`.
"""
from __future__ import annotations

import os

import numpy as np
import paddle


def save_inference_case(outdir, name, build, seed):
    """Run `build()` (-> feed names, fetch variables, feeds) under a fresh program seeded with `seed`, save the
    inference model as OUTDIR/NAME.pdmodel/.pdiparams and the feeds and Paddle's outputs as NAME.npz.

    Returns (prefix, saved program, meta): meta holds the Paddle version, the feed names and what the saved program
    fetches (2.6.2 wraps each fetch target in a scale op first, so these are read back from the saved program)."""
    paddle.seed(seed)
    np.random.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = seed
    with paddle.static.program_guard(main, startup):
        feed_names, fetch_vars, feeds = build()
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    prefix = os.path.join(outdir, name)
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        outs = exe.run(main, feed=feeds, fetch_list=fetch_vars)
        feed_vars = [main.global_block().var(n) for n in feed_names]
        paddle.static.save_inference_model(prefix, feed_vars, fetch_vars, exe, program=main)
    np.savez(prefix + ".npz", **feeds, **{f"fetch_{i}": np.asarray(o) for i, o in enumerate(outs)})
    with open(prefix + ".pdmodel", "rb") as f:
        saved = paddle.static.deserialize_program(f.read())
    fetch_ops = sorted((o for o in saved.global_block().ops if o.type == "fetch"), key=lambda o: o.attr("col"))
    meta = {"paddle": paddle.__version__, "feed_names": feed_names,
            "fetch_names": [op.input("X")[0] for op in fetch_ops]}
    return main, saved, meta
