"""The gradient-norm and update-ratio watches give one verdict and one text whether a debug session judges the
values (kernelcore/observe/watch.py) or the flight recorder judges their summaries (summary_watch.py)."""
import numpy as np
import pytest

from kernelcore.observe import summary_watch, watch
from kernelcore.observe.health_summary import summarize


@pytest.mark.parametrize("lo, hi, scale", [(None, 0.1, 1.0), (0.5, None, 1e-3), (0.5, 10.0, 1e-2)])
def test_an_update_ratio_reads_the_same_in_a_session_and_in_the_recorder(lo, hi, scale):
    w = watch.make_watch(1, "w", "update_ratio", None, lo, hi, None)
    old = np.linspace(-1, 1, 12, dtype=np.float32)
    new = old + np.float32(scale) * np.cos(np.arange(12, dtype=np.float32))
    session = watch.check(w, np, new, lambda: old)
    recorder = summary_watch.check(w, summarize(new), None, old, new)
    assert session == recorder and session is not None


def test_a_nan_gradient_norm_trips_the_explosion_bound_in_a_session_as_in_the_recorder():
    w = watch.make_watch(1, "g@GRAD", "grad_norm", None, None, 10.0, None)
    assert watch.check(w, np, np.array([np.nan, 1.0], np.float32), lambda: None) == \
        "gradient norm nan > 10 (explosion)"
    assert watch.check(w, np, np.array([3.0, 4.0], np.float32), lambda: None) is None
