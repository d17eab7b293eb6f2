"""kernelcore/ops/host_values.py's ops have no gradient: a shape, a range and literal values are constants."""
from __future__ import annotations

from ..transforms.backward import no_grad


no_grad("shape", "range", "assign_value")
