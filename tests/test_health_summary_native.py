"""The flight recorder's one-pass C summary (kernelcore/native/health_summary.c via kernelcore/native/health.py)
against the NumPy reference (kernelcore/observe/health_summary.py `summarize`) and against plain float64 NumPy:
random arrays with NaN, Inf, zeros of both signs, subnormals, huge values, empty and non-contiguous ones, arrays
large enough to be shared over threads, and the switch that leaves the reference alone."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from kernelcore import native
from kernelcore.native import health as native_health
from kernelcore.observe import health_summary as hs
from kernelcore.runtime import fast_paths

needs_library = pytest.mark.skipif(not native_health.available(), reason="the C kernels are not built here")


def _c_summary(value, threads_allowed=True):
    """The C writer's Summary of `value` (through NumberRows, as the recorder reads it) and its NaN/Inf count."""
    rows = hs.NumberRows(2)
    called = []

    def fallback(v, r, i):
        called.append(v)
        return hs.write_reference(v, r, i)
    bad = native_health.summary_writer(fallback)(value, rows, 1)
    return hs.summary_at(value.size, rows.array[1]), bad, bool(called)


def _expected(a):
    """What a summary must say of `a`, from float64 NumPy and exact Python sums."""
    f = np.asarray(a, np.float64).ravel()
    fin = f[np.isfinite(f)]
    return dict(numel=f.size, negative=int((fin < 0).sum()), zero=int((fin == 0).sum()),
                positive=int((fin > 0).sum()), nan=int(np.isnan(f).sum()), pos_inf=int(np.isposinf(f).sum()),
                neg_inf=int(np.isneginf(f).sum()), fin=fin)


def _check(s, a):
    e = _expected(a)
    fin = e.pop("fin")
    for k, v in e.items():
        assert getattr(s, k) == v, k
    if fin.size:
        assert s.min == fin.min() and s.max == fin.max()
        scale = math.fsum(abs(x) for x in fin) / fin.size
        assert abs(s.mean - math.fsum(fin) / fin.size) <= 1e-5 * scale + 1e-300
        assert s.l2 == pytest.approx(math.hypot(*fin), rel=1e-5)
    else:
        assert math.isnan(s.min) and math.isnan(s.max) and math.isnan(s.mean) and s.l2 == 0.0


special = st.sampled_from([0.0, -0.0, 1.5, -2.0, 3e38, -3e38, 1e-40, 1e-310, 1e300, -1e300, np.nan, np.inf, -np.inf])
floats = st.one_of(special, st.floats(-1e6, 1e6, allow_nan=False, width=32))


@needs_library
@settings(max_examples=150, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(0, 3000), st.lists(floats, min_size=1, max_size=64),
       st.integers(0, 2**31))
def test_the_c_summary_counts_and_sums_like_float64_numpy(dtype, n, pool, seed):
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):
        a = np.array(pool, np.float64)[rng.integers(0, len(pool), n)].astype(dtype)
    s, bad, fell_back = _c_summary(a)
    assert not fell_back and bad == s.nonfinite
    _check(s, a)


@needs_library
@settings(max_examples=60, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64]), hnp.array_shapes(min_dims=0, max_dims=3, max_side=9),
                  elements=st.floats(width=32, allow_subnormal=True)))
def test_the_c_summary_agrees_with_the_reference(a):
    s, _, _ = _c_summary(a)
    r = hs.summarize(a)
    assert s[:7] == r[:7]
    for got, want in ((s.min, r.min), (s.max, r.max)):
        assert got == want or (math.isnan(got) and math.isnan(want))
    assert s.l2 == pytest.approx(r.l2, rel=1e-5) or (math.isinf(r.l2) and math.isfinite(s.l2))
    assert (math.isnan(s.mean) and math.isnan(r.mean)) or s.mean == pytest.approx(r.mean, rel=1e-4, abs=1e-30) \
        or abs(s.mean - r.mean) <= 1e-5 * float(np.abs(a[np.isfinite(a)]).mean())


@needs_library
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arrays_shared_over_threads_sum_every_share(dtype, monkeypatch):
    monkeypatch.setattr(native_health.cpu_parts, "op_threads", lambda: 2)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(300_001).astype(dtype)
    a[[7, 150_000, 300_000]] = [np.nan, np.inf, -np.inf]  # one in each share and at the very end
    a[200_000:200_010] = 0.0
    s, bad, fell_back = _c_summary(a)
    assert not fell_back and bad == 3
    _check(s, a)


@needs_library
def test_sums_that_overflow_the_array_s_type_are_made_wider():
    big32 = np.full(5000, 3e38, np.float32)  # its sum of squares overflows float32, its sum too
    s, _, _ = _c_summary(big32)
    assert s.l2 == pytest.approx(math.sqrt(5000) * float(np.float32(3e38)), rel=1e-6)
    assert s.mean == pytest.approx(float(np.float32(3e38)), rel=1e-6)
    big64 = np.full(100, 1e300)  # float64 squares overflow: the block is summed in long double
    s, _, _ = _c_summary(big64)
    if np.finfo(np.longdouble).max > 1e700:  # x86's 80-bit long double
        assert s.l2 == pytest.approx(1e301, rel=1e-12)


@needs_library
def test_strided_and_unaligned_arrays_are_gathered_for_the_c_summary_and_float16_goes_to_the_fallback():
    a = np.arange(24, dtype=np.float32).reshape(4, 6) - 10
    for value in (a.T, a[:, ::2], np.frombuffer(b"\0" + a.tobytes(), np.float32, 24, 1)):  # transposed, strided,
        s, _, fell_back = _c_summary(value)  # unaligned
        assert not fell_back
        _check(s, np.asarray(value, np.float64))
    s, _, fell_back = _c_summary(a.astype(np.float16))
    assert fell_back
    _check(s, a.astype(np.float64))
    s, _, fell_back = _c_summary(np.zeros((0, 3), np.float32))
    assert not fell_back and s.numel == 0 and s.l2 == 0.0 and math.isnan(s.mean)


def test_the_switch_leaves_the_recorder_the_reference():
    with fast_paths.switched_off():
        assert hs.summary_writer() is hs.write_reference
    if native.library() is not None:
        assert hs.summary_writer() is not hs.write_reference


def test_the_reference_writer_round_trips_through_summary_at():
    a = np.array([np.nan, -1.0, 0.0, 2.0, np.inf], np.float32)
    rows = hs.NumberRows(1)
    assert hs.write_reference(a, rows, 0) == 2
    got, want = hs.summary_at(a.size, rows.array[0]), hs.summarize(a)
    assert got[:9] == want[:9] and got[9:] == pytest.approx(want[9:], rel=1e-12)
    assert hs.write_reference([1, 2], rows, 0) is None


@needs_library
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64, np.bool_])
def test_integers_and_booleans_take_the_c_summary_as_float64_and_match_the_reference(dtype):
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    rng = np.random.default_rng(3)
    if info is None:
        a = rng.integers(0, 2, 50).astype(bool)
    else:
        a = rng.integers(info.min, info.max, 50, dtype=dtype, endpoint=True)
        a[:3] = (info.min, info.max, 0)
    s, bad, fell_back = _c_summary(a)
    r = hs.summarize(a)
    assert not fell_back and bad == 0
    assert s[:9] == r[:9]  # counts, min and max exactly (rounding to float64 keeps signs, zeros and order)
    assert s.l2 == pytest.approx(r.l2, rel=1e-12) and s.mean == pytest.approx(r.mean, rel=1e-9, abs=1e-9 * r.l2)


@needs_library
def test_several_arrays_in_one_call_give_each_its_own_numbers():
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(n).astype(dt) for n, dt in ((1, np.float32), (300, np.float64), (70_000, np.float32),
                                                              (0, np.float32))]
    values[1][7] = np.inf
    values[2][[3, 9]] = np.nan
    rows = hs.NumberRows(8)
    assert native_health.many_writer()(values, rows, 2) == 3
    for i, v in enumerate(values):
        _check(hs.summary_at(v.size, rows.array[2 + i]), v)
    before = rows.array.copy()
    assert native_health.many_writer()([values[0], values[1].T[::2]], rows, 0) is None  # a strided one: none taken
    assert native_health.many_writer()([values[0], np.arange(3)], rows, 0) is None  # integers go one by one
    np.testing.assert_array_equal(rows.array, before)
