"""Make PaddlePaddle 3.3.1 (legacy IR) write an inference program that uses op types kernelcore has no
kernel for (tests/test_unsupported_ops.py checks they are all reported at once):

    FLAGS_enable_pir_api=0 .venv-paddle/bin/python tests/paddle_oracle/make_unsupported.py OUTDIR

Writes OUTDIR/unsupported.pdmodel (+ .pdiparams) and OUTDIR/unsupported.json: the op types of the saved
program, in order, as Paddle wrote them.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
warnings.filterwarnings("ignore")

import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

paddle.enable_static()


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    main_prog, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_prog, startup):
        x = paddle.static.data("x", [-1, 4], "float32")
        h = paddle.static.nn.fc(x, 4)
        a = F.relu6(h)                      # relu6
        b = F.hardswish(a)                  # hard_swish
        c = F.softsign(b)                   # softsign
        d = F.relu6(c + a)                  # relu6 again, elementwise_add
        n = paddle.shape(d)                 # shape
        k = paddle.kron(d, d)               # kron: ops kernelcore is not meant to grow soon, so the test
        t = paddle.trace(k)                 # trace: keeps finding some it lacks
        out = paddle.mean(d) + t
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    prefix = os.path.join(outdir, "unsupported")
    paddle.static.save_inference_model(prefix, [x], [out, n], exe, program=main_prog)
    prog, _, _ = paddle.static.load_inference_model(prefix, exe)
    types = [op.type for op in prog.global_block().ops]
    with open(prefix + ".json", "w") as f:
        json.dump({"op_types": types, "paddle": paddle.__version__}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
