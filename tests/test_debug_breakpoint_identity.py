"""A breakpoint asked for twice is one breakpoint: 'Break here' twice must not list two, of which removing one
would leave the other firing; asking again for a disabled one enables it."""
import numpy as np

import kernelcore as kc


def _session():
    prog = kc.Program()
    with kc.program_guard(prog):
        block = prog.global_block()
        x = block.create_var("x", shape=[-1, 4], dtype="float32")
        w = block.create_parameter("w", shape=[4, 3])
        kc.op.relu(kc.op.mul(x, w))
    scope = kc.Scope()
    scope.set("w", np.ones((4, 3), np.float32))
    return kc.debug(prog, feed={"x": np.ones((2, 4), np.float32)}, scope=scope)


def test_the_same_breakpoint_twice_is_one_breakpoint():
    sess = _session()
    a = sess.break_on(block=0, op=1)
    b = sess.break_on(block=0, op=1)
    assert a is b and len(sess.breakpoints) == 1
    t1, t2 = sess.break_on("relu"), sess.break_on("relu")
    assert t1 is t2 and len(sess.breakpoints) == 2
    assert sess.break_on(block=0, op=0) is not a and len(sess.breakpoints) == 3  # a different op is another one


def test_asking_again_enables_a_disabled_breakpoint():
    sess = _session()
    bp = sess.break_on("relu")
    bp.enabled = False
    assert sess.break_on("relu") is bp and bp.enabled
