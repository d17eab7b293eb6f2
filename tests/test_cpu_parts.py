"""An op's parts on the CPU's cores (kernelcore/runtime/cpu_parts.py): which runs split and into how many parts, that a
split run holds the BLAS at one thread and gives its limit back, that parts run at once, and that the convolutions
split so give what the whole op gives (to the last bits OpenBLAS's own threads already change)."""
import dataclasses
import os
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import kernelcore as kc
from kernelcore.runtime import cpu_parts as P
from kernelcore import native
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
def test_a_split_run_holds_the_blas_at_one_thread_and_allows_its_limit_in_parts():
    blas = P._numpy_blas()
    with threadpool_limits(2):
        assert P.cpu_parts(np, 10 * P.MIN_SPLIT_WORK) == 1  # outside a split run: one part
        with P.split_run(np, True):
            assert blas.num_threads == 1
            assert P.cpu_parts(np, P.MIN_SPLIT_WORK) == 2
            assert P.cpu_parts(np, P.MIN_SPLIT_WORK - 1) == 1  # small ops run whole
            assert P.cpu_parts(strict_xp, 10 * P.MIN_SPLIT_WORK) == 1  # other array modules: one part
            with P.split_run(np, True):  # a run inside the run changes nothing
                assert P.cpu_parts(np, P.MIN_SPLIT_WORK) == 2
            assert blas.num_threads == 1
        assert blas.num_threads == 2
        with P.split_run(np, False), P.split_run(strict_xp, True):
            assert blas.num_threads == 2 and P.cpu_parts(np, 10 * P.MIN_SPLIT_WORK) == 1
        with pytest.raises(RuntimeError):
            with P.split_run(np, True):
                raise RuntimeError("an op failed")
        assert blas.num_threads == 2 and P.cpu_parts(np, 10 * P.MIN_SPLIT_WORK) == 1
    with threadpool_limits(1), P.split_run(np, True):
        assert P.cpu_parts(np, 10 * P.MIN_SPLIT_WORK) == 1


@needs_blas
def test_parts_run_at_once_in_a_split_run_and_in_turn_elsewhere():
    seen, both_in = [], threading.Barrier(2, timeout=10)

    def part(i):
        def call():
            both_in.wait()  # returns only if the other part runs at the same time
            seen.append(threading.get_ident())
            return i * 10
        return call

    with threadpool_limits(2), P.split_run(np, True):
        assert P.run_parts([part(0), part(1)]) == [0, 10]
    assert len(set(seen)) == 2
    order = []
    with threadpool_limits(1), P.split_run(np, True):  # one core allowed: no hand-off
        assert P.run_parts([lambda: order.append(threading.get_ident()), lambda: order.append(
            threading.get_ident())]) == [None, None]
    assert order == [threading.get_ident()] * 2


@needs_blas
def test_a_failing_part_raises_after_every_part_ended():
    ended = []

    def slow():
        threading.Event().wait(0.05)
        ended.append("slow")

    def fails():
        raise ValueError("part failed")

    with threadpool_limits(2), P.split_run(np, True):
        with pytest.raises(ValueError, match="part failed"):
            P.run_parts([fails, slow])
        assert ended == ["slow"]
        with pytest.raises(ValueError, match="part failed"):
            P.run_parts([slow, fails])
        assert ended == ["slow", "slow"]


@needs_blas
def test_a_part_that_splits_again_runs_its_parts_in_turn():
    def inner():
        assert P.cpu_parts(np, 10 * P.MIN_SPLIT_WORK) == 1  # the split is held
        return P.run_parts([lambda: 1, lambda: 2])

    with threadpool_limits(2), P.split_run(np, True):
        assert P.run_parts([inner, inner]) == [[1, 2], [1, 2]]


def _numpy_convolutions(monkeypatch):
    """The NumPy convolution kernels, which run in parts (the C ones, conv_gemm.c and depthwise_conv.c, share their
    loops over the cores themselves: tests/test_native.py). They serve grouped and 3-D convolutions, and every
    convolution where the C library is not built."""
    monkeypatch.setattr(native, "conv2d_ready", lambda *a: False)
    monkeypatch.setattr(native, "depthwise_ready", lambda *a: False)


def _conv_program():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", (2, 3, 8, 8), "float32")
    b.create_var("w", (4, 3, 3, 3), "float32")
    b.append_op("conv2d", inputs={"Input": ["x"], "Filter": ["w"]}, outputs={"Output": ["y"]},
                attrs=dict(strides=[1, 1], paddings=[1, 1]))
    return prog


@needs_blas
def test_which_runs_split(monkeypatch):
    """A convolution's program runs split; paused by a debugger, or beside an op that needs the BLAS's own threads
    (the fused RNN where its steps run on OpenBLAS; with the C kernels they run on the split run's threads), it
    does not."""
    seen = []
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    _numpy_convolutions(monkeypatch)
    monkeypatch.setattr(P, "run_parts", lambda calls: seen.append(len(calls)) or [c() for c in calls])
    prog = _conv_program()  # the convolution's parts go through P.run_parts (run_parts_into)
    feed = {"x": f32(2, 3, 8, 8), "w": f32(4, 3, 3, 3)}
    exe = kc.Executor(kc.CPUPlace())
    with threadpool_limits(2):
        exe.run(prog, feed=feed, fetch_list=["y"])
        assert seen == [2]
        gen = exe.run_iter(prog, feed=feed, fetch_list=["y"], pausing=True)
        for _ in gen:
            assert P._numpy_blas().num_threads == 2
        assert seen == [2]
        from kernelcore.native.rnn import STEPS_IN_C
        rnn = kc.get_op_def("rnn")
        assert P.wants_parts([kc.get_op_def("conv2d"), rnn]) == STEPS_IN_C
        assert not P.wants_parts([kc.get_op_def("conv2d"), dataclasses.replace(rnn, runs_in_parts=False,
                                                                             needs_blas_threads=True)])
        assert P.wants_parts([kc.get_op_def("conv2d_grad"), kc.get_op_def("momentum")])
        assert not P.wants_parts([kc.get_op_def("mul"), kc.get_op_def("sgd")])


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


CASES = [  # (op, x, w, attrs): ordinary, strided with groups, depthwise (stride 1 and 2), 7x7 on 3 channels, a
    # late layer (more filter than columns), one image, 3-D
    ("conv2d", (8, 16, 12, 12), (32, 16, 3, 3), dict(strides=[1, 1], paddings=[1, 1])),
    ("conv2d", (5, 16, 12, 12), (32, 8, 3, 3), dict(strides=[2, 2], paddings=[1, 1], groups=2)),
    ("depthwise_conv2d", (4, 12, 20, 20), (12, 1, 3, 3), dict(strides=[1, 1], paddings=[1, 1], groups=12)),
    ("depthwise_conv2d", (3, 6, 9, 9), (12, 1, 3, 3), dict(strides=[2, 2], paddings=[1, 1], groups=6)),
    ("conv2d", (7, 3, 20, 20), (8, 3, 7, 7), dict(strides=[2, 2], paddings=[3, 3])),
    ("conv2d", (4, 24, 2, 2), (48, 24, 3, 3), dict(strides=[1, 1], paddings=[1, 1])),  # late layer: by channels
    ("conv2d", (1, 8, 9, 9), (16, 8, 3, 3), dict(strides=[1, 1], paddings=[1, 1])),  # one image
    ("conv3d", (3, 4, 6, 6, 6), (6, 4, 3, 3, 3), dict(strides=[1, 1, 1], paddings=[1, 1, 1])),
]


@needs_blas
@pytest.mark.parametrize("op, xs, ws, attrs", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_split_convolutions_give_what_the_whole_op_gives(monkeypatch, op, xs, ws, attrs):
    """Through the executor: the forward by images or output channels, Input@GRAD by images, Filter@GRAD by
    channels or groups, at 2 and 3 parts, against one part."""
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    _numpy_convolutions(monkeypatch)
    handed_off = []
    workers = P._workers
    monkeypatch.setattr(P, "_workers", lambda n: handed_off.append(n) or workers(n))
    x, w = f32(*xs), f32(*ws)
    exe = kc.Executor(kc.CPUPlace())
    results = {}
    for threads in (1, 2, 3):
        if threads == 2:
            assert not handed_off, "a run allowed one core handed parts to other threads"
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


@needs_blas
@pytest.mark.parametrize("a, b", [((40, 30), (30, 7)), ((5, 30), (30, 41)), ((3, 9, 8), (8, 10)),
                                  ((2, 1, 6, 5), (3, 5, 9)), ((6,), (6, 4)), ((1, 8), (8, 1))])
def test_matmul_in_parts_is_matmul(monkeypatch, a, b):
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    x, y = f32(*a), f32(*b)
    want = np.matmul(x, y)
    with threadpool_limits(2), P.split_run(np, True):
        got = P.matmul(np, x, y)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_blas
def test_a_cnns_classifier_and_its_gradients_run_in_parts(monkeypatch):
    """mul / matmul_v2 and their gradients in a split run (a convolution in the program makes it one)."""
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    _numpy_convolutions(monkeypatch)
    split = []
    real = P.run_parts
    monkeypatch.setattr(P, "run_parts", lambda calls: split.append(len(calls)) or real(calls))
    prog = kc.Program()
    b = prog.global_block()
    for name, shape in (("x", (4, 3, 6, 6)), ("w", (5, 3, 3, 3)), ("fc", (180, 7)), ("g", (4, 7))):
        b.create_var(name, shape, "float32")
    b.append_op("conv2d", inputs={"Input": ["x"], "Filter": ["w"]}, outputs={"Output": ["y"]},
                attrs=dict(strides=[1, 1], paddings=[1, 1]))
    b.append_op("flatten_contiguous_range", inputs={"X": ["y"]}, outputs={"Out": ["flat"]},
                attrs={"start_axis": 1, "stop_axis": -1})
    b.append_op("matmul_v2", inputs={"X": ["flat"], "Y": ["fc"]}, outputs={"Out": ["o"]})
    b.append_op("matmul_v2_grad", inputs={"X": ["flat"], "Y": ["fc"], "Out@GRAD": ["g"]},
                outputs={"X@GRAD": ["dflat"], "Y@GRAD": ["dfc"]})
    feed = {"x": f32(4, 3, 6, 6), "w": f32(5, 3, 3, 3), "fc": f32(180, 7), "g": f32(4, 7)}
    exe = kc.Executor(kc.CPUPlace())
    with threadpool_limits(1):
        want = exe.run(prog, feed=feed, fetch_list=["o", "dflat", "dfc"])
    assert split == []
    with threadpool_limits(2):
        got = exe.run(prog, feed=feed, fetch_list=["o", "dflat", "dfc"])
    assert len(split) == 4  # the convolution, the product and its two gradients (P.matmul)
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-5)


def _split_conv_in_child(q):
    with threadpool_limits(2), P.split_run(np, True):
        x, w = np.ones((4, 3, 8, 8), np.float32), np.ones((5, 3, 3, 3), np.float32)
        from kernelcore.native import conv as NC
        q.put(float(NC.forward_in_parts(np, x, w, [1, 1], [(1, 1), (1, 1)], [1, 1], 1).sum()))


@needs_blas
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_runs_parts_on_its_own_pool(monkeypatch):
    """The parent's pool threads are not copied into a child: the child makes its own (else its parts wait
    forever on threads that are not there)."""
    import multiprocessing
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    _numpy_convolutions(monkeypatch)  # the fork copies the patch
    _split_conv_in_child(__import__("queue").Queue())  # the parent's pool now exists
    assert P._pool is not None
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_split_conv_in_child, args=(q,))
    child.start()
    child.join(timeout=30)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child's split convolution never finished")
    assert q.get(timeout=5) == float(np.sum(_whole_conv()))


def _whole_conv():
    from kernelcore.native import conv as NC
    x, w = np.ones((4, 3, 8, 8), np.float32), np.ones((5, 3, 3, 3), np.float32)
    return NC.FAST.forward(np, x, w, [1, 1], [(1, 1), (1, 1)], [1, 1], 1)


def test_without_a_blas_to_hold_nothing_splits(monkeypatch):
    """NumPy on a BLAS threadpoolctl cannot find or tell apart (two loaded, none under NumPy): runs stay whole."""
    monkeypatch.setattr(P, "_blas", False)
    assert P._numpy_blas() is None and P.split_run_parts() is None
    with P.split_run(np, True):
        assert P.cpu_parts(np, 10 * P.MIN_SPLIT_WORK) == 1
    prog = _conv_program()
    (y,) = kc.Executor(kc.CPUPlace()).run(prog, feed={"x": f32(2, 3, 8, 8), "w": f32(4, 3, 3, 3)}, fetch_list=["y"])
    assert y.shape == (2, 4, 8, 8)


@needs_blas
def test_short_ops_run_whole_and_long_ones_split():
    """The work estimate keeps ops that finish before a hand-off pays whole (MobileNetV2's 1x1 convolutions, a
    small momentum update) and splits the long ones (ResNet-18's 3x3 convolutions, a depthwise convolution on a
    16x16 map, whose multiply-adds weigh DEPTHWISE_WORK each)."""
    from kernelcore.native import conv as NC
    from kernelcore.native import optimizer as O
    from kernelcore.ops import pool as Pool

    def parts(x, w, s=1):
        return P.cpu_parts(np, NC.conv_work(x, w, [s, s], x[1] if w[1] == 1 else 1))

    assert NC.conv_work((8, 144, 16, 16), (144, 1, 3, 3), [1, 1], 144) == \
        NC.DEPTHWISE_WORK * NC.conv_macs((8, 144, 16, 16), (144, 1, 3, 3), [1, 1])
    with threadpool_limits(2), P.split_run(np, True):
        assert parts((8, 64, 16, 16), (64, 64, 3, 3)) == 2
        assert parts((8, 512, 2, 2), (512, 512, 3, 3)) == 2
        assert parts((8, 144, 16, 16), (144, 1, 3, 3)) == 2
        assert parts((8, 960, 2, 2), (320, 960, 1, 1)) == 1
        assert parts((8, 16, 32, 32), (96, 16, 1, 1)) == 1
        assert parts((8, 192, 8, 8), (192, 1, 3, 3)) == 1
        assert P.cpu_parts(np, (1 << 19) * O.ELEMENT_WORK) == 1
        assert P.cpu_parts(np, (1 << 20) * O.ELEMENT_WORK) == 2
        # max pooling, all images: ResNet-18's 3x3 stride 2 after its first convolution; a small CNN's 2x2
        assert P.cpu_parts(np, 8 * Pool.max_pool_work((8, 64, 32, 32), [3, 3], [16, 16])) == 2
        assert P.cpu_parts(np, 8 * Pool.max_pool_work((8, 64, 16, 16), [3, 3], [8, 8])) == 1
        assert P.cpu_parts(np, 32 * Pool.max_pool_work((32, 8, 32, 32), [2, 2], [16, 16])) == 1


@needs_blas
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_parts_write_their_slices_of_one_output(axis):
    whole = f32(6, 5, 4)
    slices = P.chunks(whole.shape[axis], 2)
    lead = (slice(None),) * (axis % whole.ndim)
    with threadpool_limits(2), P.split_run(np, True):
        got = P.run_parts_into(np, whole.shape, whole.dtype, axis,
                               [(s, lambda s=s: whole[lead + (s,)] * 1) for s in slices])
    np.testing.assert_array_equal(got, whole)


@needs_blas
@pytest.mark.parametrize("ksize, strides, paddings", [([3, 3], [2, 2], [1, 1]), ([2, 2], [2, 2], [0, 0])])
def test_max_pooling_by_images_gives_what_the_whole_batch_gives(monkeypatch, ksize, strides, paddings):
    """pool2d and pool2d_grad (max, regular windows) in parts by images: bit for bit the whole batch's, ties
    included (the zeros after a ReLU: each window's first maximum takes the gradient)."""
    monkeypatch.setattr(P, "MIN_SPLIT_WORK", 0)
    monkeypatch.setattr(native, "ready", lambda *a: False)  # the NumPy kernels' parts (C: tests/test_native.py)
    split = []
    real = P.run_parts
    monkeypatch.setattr(P, "run_parts", lambda calls: split.append(len(calls)) or real(calls))
    x = np.maximum(f32(5, 3, 9, 8), 0)
    attrs = dict(pooling_type="max", ksize=ksize, strides=strides, paddings=paddings)
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", x.shape, "float32")
    b.append_op("pool2d", inputs={"X": ["x"]}, outputs={"Out": ["y"]}, attrs=attrs)
    exe = kc.Executor(kc.CPUPlace())
    with threadpool_limits(1):
        (y,) = exe.run(prog, feed={"x": x}, fetch_list=["y"])
    g = np.cos(np.arange(y.size, dtype=np.float32)).reshape(y.shape)
    grad = kc.Program()
    gb = grad.global_block()
    for name, v in (("x", x), ("y", y), ("g", g)):
        gb.create_var(name, v.shape, "float32")
    gb.append_op("pool2d_grad", inputs={"X": ["x"], "Out": ["y"], "Out@GRAD": ["g"]}, outputs={"X@GRAD": ["dx"]},
                 attrs=attrs)
    with threadpool_limits(1):
        (dx,) = exe.run(grad, feed={"x": x, "y": y, "g": g}, fetch_list=["dx"])
    assert split == []
    with threadpool_limits(2):
        (y2,) = exe.run(prog, feed={"x": x}, fetch_list=["y"])
        (dx2,) = exe.run(grad, feed={"x": x, "y": y, "g": g}, fetch_list=["dx"])
    assert split == [2, 2]
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(dx2, dx)
