"""Draws, the assert op, histogram and matrix_rank have no gradient (as in Paddle)."""
from __future__ import annotations

from ..transforms.backward import no_grad

no_grad("bernoulli", "poisson", "standard_gamma", "multinomial", "assert", "histogram", "matrix_rank")
