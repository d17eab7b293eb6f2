"""Large float32 adds in C as the fast form of elementwise_add (kernelcore/ops/math.py's specialised form, NumPy's
add): kernelcore/native/add_rows.c on the run's threads where Y repeats along a run of X's dims (a residual add, a
bias over the last dims, an attention mask over the heads and rows). The same bits as NumPy's add, but for which
NaN's payload survives where both operands are NaN."""
from __future__ import annotations

import numpy as np

from .. import native
from ..runtime.fast_paths import fast_form


def add_in_c(x, y):
    """x + y: in C where native.add_plan has a plan for these arrays, else NumPy's add."""
    plan = native.add_plan(np, x, y)
    if plan is not None:
        return native.add_rows(x, y, plan)
    return np.add(x, y)


@fast_form("elementwise_add")
def add_over(form):
    return add_in_c if form is np.add else form
