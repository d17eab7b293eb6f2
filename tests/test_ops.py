"""Every op case's kernel on the CPU against its NumPy reference."""
import pytest

from opcases import all_cases, compare, run

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_matches_numpy_reference(case):
    compare(case, run(case))
