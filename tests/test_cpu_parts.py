"""An op's parts on the CPU's cores (kernelcore/ops/_cpu_parts.py): how many parts, that they run at once with the
BLAS held to one thread and given its limit back, and that the convolutions split so give what the whole op gives
(to the last bits OpenBLAS's own threads already change)."""
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import kernelcore as kc
from kernelcore.ops import _cpu_parts as P
from kernelcore.testing.strict_xp import xp as strict_xp

rng = np.random.default_rng(5)
needs_blas = pytest.mark.skipif(P._numpy_blas() is None, reason="no BLAS NumPy loaded that threadpoolctl controls")


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("total, parts", [(8, 2), (7, 3), (3, 5), (1, 4), (10, 1)])
def test_chunks_cover_the_range_evenly_and_none_is_empty(total, parts):
    got = P.chunks(total, parts)
    assert len(got) == min(parts, total)
    assert [i for s in got for i in range(s.start, s.stop)] == list(range(total))
    sizes = [s.stop - s.start for s in got]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


@needs_blas
def test_parts_follow_the_blas_thread_limit():
    with threadpool_limits(2):
        assert P.cpu_parts(np, P.MIN_SPLIT_MACS) == 2
        assert P.cpu_parts(np, P.MIN_SPLIT_MACS - 1) == 1  # small ops run whole
        assert P.cpu_parts(strict_xp, 10 * P.MIN_SPLIT_MACS) == 1  # other array modules: one part
    with threadpool_limits(1):
        assert P.cpu_parts(np, 10 * P.MIN_SPLIT_MACS) == 1


@needs_blas
def test_parts_run_at_once_with_one_blas_thread_and_the_limit_comes_back():
    seen, both_in = [], threading.Barrier(2, timeout=10)

    def part(i):
        def call():
            both_in.wait()  # returns only if the other part runs at the same time
            seen.append((i, threading.get_ident(), P._numpy_blas().num_threads))
            return i * 10
        return call

    with threadpool_limits(2):
        assert P.run_parts([part(0), part(1)]) == [0, 10]
        assert P._numpy_blas().num_threads == 2
    assert len({ident for _, ident, _ in seen}) == 2
    assert {threads for _, _, threads in seen} == {1}


@needs_blas
def test_a_failing_part_raises_after_every_part_ended_and_the_limit_comes_back():
    ended = []

    def slow():
        threading.Event().wait(0.05)
        ended.append("slow")

    def fails():
        raise ValueError("part failed")

    with threadpool_limits(2):
        with pytest.raises(ValueError, match="part failed"):
            P.run_parts([fails, slow])
        assert ended == ["slow"]
        assert P._numpy_blas().num_threads == 2
        with pytest.raises(ValueError, match="part failed"):
            P.run_parts([slow, fails])
        assert P._numpy_blas().num_threads == 2


@needs_blas
def test_a_part_that_splits_again_runs_its_parts_in_turn():
    def inner():
        assert P.cpu_parts(np, 10 * P.MIN_SPLIT_MACS) == 1  # the split is held
        return P.run_parts([lambda: 1, lambda: 2])

    with threadpool_limits(2):
        assert P.run_parts([inner, inner]) == [[1, 2], [1, 2]]


def _conv_grad_program(op, x, w, g, attrs):
    prog = kc.Program()
    block = prog.global_block()
    for name, v in (("x", x), ("w", w), ("g", g)):
        block.create_var(name, v.shape, v.dtype)
    block.append_op(f"{op}_grad", inputs={"Input": ["x"], "Filter": ["w"], "Output@GRAD": ["g"]},
                    outputs={"Input@GRAD": ["dx"], "Filter@GRAD": ["dw"]}, attrs=attrs)
    fwd = kc.Program()
    fb = fwd.global_block()
    for name, v in (("x", x), ("w", w)):
        fb.create_var(name, v.shape, v.dtype)
    fb.append_op(op, inputs={"Input": ["x"], "Filter": ["w"]}, outputs={"Output": ["y"]}, attrs=attrs)
    return fwd, prog


CASES = [  # (op, x, w, attrs): ordinary, strided with groups, depthwise (stride 1 and 2), 7x7 on 3 channels, 3-D
    ("conv2d", (8, 16, 12, 12), (32, 16, 3, 3), dict(strides=[1, 1], paddings=[1, 1])),
    ("conv2d", (5, 16, 12, 12), (32, 8, 3, 3), dict(strides=[2, 2], paddings=[1, 1], groups=2)),
    ("depthwise_conv2d", (4, 12, 20, 20), (12, 1, 3, 3), dict(strides=[1, 1], paddings=[1, 1], groups=12)),
    ("depthwise_conv2d", (3, 6, 9, 9), (12, 1, 3, 3), dict(strides=[2, 2], paddings=[1, 1], groups=6)),
    ("conv2d", (7, 3, 20, 20), (8, 3, 7, 7), dict(strides=[2, 2], paddings=[3, 3])),
    ("conv3d", (3, 4, 6, 6, 6), (6, 4, 3, 3, 3), dict(strides=[1, 1, 1], paddings=[1, 1, 1])),
]


@needs_blas
@pytest.mark.parametrize("op, xs, ws, attrs", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_split_convolutions_give_what_the_whole_op_gives(monkeypatch, op, xs, ws, attrs):
    """Through the executor: the forward by images, Input@GRAD by images, Filter@GRAD by channels or groups, at
    2 and 3 parts, against one part."""
    monkeypatch.setattr(P, "MIN_SPLIT_MACS", 0)
    handed_off = []
    workers = P._workers
    monkeypatch.setattr(P, "_workers", lambda n: handed_off.append(n) or workers(n))
    x, w = f32(*xs), f32(*ws)
    exe = kc.Executor(kc.CPUPlace())
    results = {}
    for threads in (1, 2, 3):
        with threadpool_limits(threads):
            fwd, bwd = _conv_grad_program(op, x, w, np.zeros(1, np.float32), attrs)
            (y,) = exe.run(fwd, feed={"x": x, "w": w}, fetch_list=["y"])
            g = np.cos(np.arange(y.size, dtype=np.float32)).reshape(y.shape)
            _, bwd = _conv_grad_program(op, x, w, g, attrs)
            results[threads] = [y, *exe.run(bwd, feed={"x": x, "w": w, "g": g}, fetch_list=["dx", "dw"])]
    assert handed_off, "nothing ran in parts"
    for threads in (2, 3):
        for got, want, name in zip(results[threads], results[1], ("Output", "Input@GRAD", "Filter@GRAD")):
            assert got.shape == want.shape, name
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()), err_msg=name)
