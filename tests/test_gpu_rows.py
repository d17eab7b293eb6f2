"""bench/_gpu_rows.py: the batch-64 feeds bench/gpu_models.py runs Paddle's fixed-batch programs with, and its
stepping-speed row, through the strict stand-in (no GPU)."""
import sys
from pathlib import Path

import numpy as np

import kernelcore as kc
from kernelcore.runtime.place import StrictPlace, to_host

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _gpu_rows import open_batch, scope_on, stacked_lstm, stepping_rate  # noqa: E402


def fixed_batch_program(batch: int):
    prog = kc.Program()
    with kc.program_guard(prog):
        g = prog.global_block()
        x = g.create_var("x", [batch, 3])
        w = g.create_parameter("w", [3, 2])
        out = kc.op.matmul_v2(x, w)
    return prog, out


def test_a_fixed_batch_program_takes_64_rows_once_opened_and_each_row_is_the_same_sample():
    prog, out = fixed_batch_program(8)
    scope = kc.Scope()
    scope.set("w", np.arange(6, dtype=np.float32).reshape(3, 2))
    small = {"x": np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)}
    with_8 = np.asarray(kc.Executor().run(prog, small, [out], scope)[0])
    big = open_batch(prog, small, 64)
    assert big["x"].shape == (64, 3)
    (with_64,) = kc.Executor().run(prog, big, [out], scope)
    np.testing.assert_array_equal(np.asarray(with_64), np.tile(with_8, (8, 1)))


def test_a_batch_that_is_not_a_multiple_is_cut_to_the_rows_asked_for():
    prog, _ = fixed_batch_program(32)
    big = open_batch(prog, {"x": np.arange(96, dtype=np.float32).reshape(32, 3)}, 64 + 5)
    assert big["x"].shape == (69, 3)
    np.testing.assert_array_equal(big["x"][64:], big["x"][:5])


def test_stepping_a_two_layer_lstm_by_timestep_takes_each_layers_timesteps_on_both_places():
    T = 5
    model = stacked_lstm(T, 2, 4, 4)
    on_device, _ = stepping_rate(StrictPlace(0), model, 1)
    on_cpu, _ = stepping_rate(kc.CPUPlace(), model, 1)
    assert on_device == on_cpu >= 2 * T  # every timestep of both layers is a stop
    prog, params, feed, out = model
    scope = scope_on(StrictPlace(0), params)
    session = kc.debug(prog, feed, [out], scope, place=StrictPlace(0))
    session.run_to_end()
    on_host = to_host(scope.find_var(out.name).value)
    cpu = kc.Executor().run(prog, feed, [out], scope_on(kc.CPUPlace(), params))[0]
    np.testing.assert_allclose(on_host, np.asarray(cpu), rtol=1e-5, atol=1e-6)
