"""The parity tests' comparison with Paddle's fetches catches what it must: another shape, another dtype,
other values (and names the fetch that differs)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_models import check_fetches  # noqa: E402

REF = {"fetch_0": np.arange(6, dtype=np.float32).reshape(2, 3), "fetch_1": np.array([1, 2], np.int64)}


def test_paddles_own_fetches_pass():
    check_fetches([REF["fetch_0"].copy(), REF["fetch_1"].copy()], REF, "same")


@pytest.mark.parametrize("outs", [
    [REF["fetch_0"].reshape(3, 2), REF["fetch_1"]],
    [REF["fetch_0"].astype(np.float64), REF["fetch_1"]],
    [REF["fetch_0"], REF["fetch_1"].astype(np.int32)],
], ids=["shape", "float_dtype", "int_dtype"])
def test_another_shape_or_dtype_fails(outs):
    with pytest.raises(AssertionError):
        check_fetches(outs, REF, "case")


def test_other_values_fail_naming_the_fetch():
    with pytest.raises(AssertionError, match=r"case: fetch 1 \(ids\)"):
        check_fetches([REF["fetch_0"], REF["fetch_1"] + 1], REF, "case", names=["x", "ids"])


def test_integers_must_be_equal_where_a_tolerance_would_let_them_pass():
    ids = np.array([200_000], np.int64)  # off by one: within rtol=1e-4 of the truth
    with pytest.raises(AssertionError, match="fetch 0"):
        check_fetches([ids + 1], {"fetch_0": ids}, "case")
