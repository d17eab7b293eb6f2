"""Device operations per op, the reference kernels against the fused ones, counted on the strict stand-in: each case
of tests/device_cases.py, and each rnn training program of bench/gpu_rnn_check.py (forward and gradient), runs
once inside a graph capture (kernelcore/testing/strict_cuda.py records every device
operation: an array expression, a copy, a user kernel; allocations and views are not counted), fast paths off and
then on. On a GPU each of these is a kernel launch that Python waits to issue; the count says nothing of the time
a launch takes.

    .venv/bin/python bench/device_launches.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

import kernelcore as kc  # noqa: E402
from kernelcore.runtime import fast_paths  # noqa: E402
from kernelcore.runtime.place import StrictPlace  # noqa: E402
from kernelcore.testing import strict_cuda  # noqa: E402
from kernelcore.testing.strict_xp import xp  # noqa: E402


# what launches nothing: an allocation from the pool, a view (reshape, a slice, astype to the same dtype); zeros
# and copies are launches
NO_LAUNCH = {"empty", "empty_like", "view"}


def operations(case, training: bool):
    """Device operations of one run of the case's op, its inputs already on the device; or what a capture refused
    (a copy from the host, a read back), itself a wait on the host."""
    from device_cases import build
    prog, feed, _ = build(case)
    return program_operations(prog, feed, training)


def rnn_training_program(name, mode, layers, bidirec):
    """An rnn op, the mean of its Out and every gradient (rnn_grad), on bench/gpu_rnn_check.py's inputs."""
    from gpu_rnn_check import _program
    prog, feed, outs = _program(name, mode, layers, bidirec)
    block = prog.global_block()
    loss = block.create_var("loss", (), "float32")
    block.append_op("mean", inputs={"X": [outs["Out"][0]]}, outputs={"Out": [loss]})
    wrt = [n for n in feed if n.startswith(("Input", "WeightList", "PreState"))]
    kc.gradients([loss], [block.var(n) for n in wrt])
    return prog, feed


def program_operations(prog, feed, training: bool):
    exe, scope = kc.Executor(StrictPlace()), kc.Scope()
    dev = {k: xp.asarray(v) for k, v in feed.items()}
    exe.run(prog, feed=dev, fetch_list=[], scope=scope, training=training)  # prepared, kernels built
    stream = xp.cuda.Stream()
    with stream:
        stream.begin_capture()
        try:
            exe.run(prog, feed=dev, fetch_list=[], scope=scope, training=training, return_numpy=False)
        except kc.errors.OpRunError as e:
            if not isinstance(e.__cause__, strict_cuda.CUDARuntimeError):
                raise
            return "host " + str(e.__cause__).split("(", 1)[1].split(":")[0].rstrip(")")
        finally:
            graph = stream.end_capture()
    return sum(name not in NO_LAUNCH for name in graph.operations)


def main() -> int:
    from device_cases import FUSED
    print(f"{'case':40s} {'reference':>24s} {'fused':>6s}")
    for case, training, _ in FUSED:
        with fast_paths.switched_off():
            ref = operations(case, training)
        print(f"{str(case):40s} {ref!s:>24s} {operations(case, training)!s:>6s}")
    from gpu_rnn_check import GRADIENT_CASES
    for name, mode, layers, bidirec in GRADIENT_CASES:
        prog, feed = rnn_training_program(name, mode, layers, bidirec)
        with fast_paths.switched_off():
            ref = program_operations(prog, feed, True)
        print(f"{'rnn + rnn_grad ' + name:40s} {ref!s:>24s} {program_operations(prog, feed, True)!s:>6s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
