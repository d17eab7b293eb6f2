"""Places: where a kernel runs and where its values live.

A place knows its array module (`xp`): NumPy for the CPU, CuPy for a GPU.
CuPy is an optional extra, imported only when a GPU place is first used.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PlaceError


@dataclass(frozen=True)
class CPUPlace:
    kind = "cpu"

    @property
    def xp(self):
        return np

    def __str__(self) -> str:
        return "CPUPlace"


@dataclass(frozen=True)
class GPUPlace:
    device_id: int = 0
    kind = "gpu"

    @property
    def xp(self):
        return cupy_module()

    def __str__(self) -> str:
        return f"GPUPlace({self.device_id})"


@dataclass(frozen=True)
class StrictPlace(GPUPlace):
    """Test-only: the GPU code path (GPU kernels, device feeds, explicit fetches) run against
    kernelcore.testing.strict_xp, a NumPy-backed module that refuses what CuPy refuses. No GPU needed."""

    @property
    def xp(self):
        from ..testing.strict_xp import xp
        return xp

    def __str__(self) -> str:
        return "StrictPlace"


_cupy = None


def cupy_module():
    """CuPy, or a PlaceError saying why a GPU place cannot be used here."""
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError as e:
            raise PlaceError("a GPU place needs CuPy: pip install 'kernelcore[gpu]'") from e
        try:
            ok = cupy.cuda.is_available()
        except Exception:  # the runtime itself may fail to load
            ok = False
        if not ok:
            raise PlaceError("CuPy is installed but no usable CUDA GPU/driver was found")
        _cupy = cupy
    return _cupy


def gpu_available() -> bool:
    try:
        cupy_module()
        return True
    except PlaceError:
        return False


_STRICT_MODULE = "kernelcore.testing.strict_xp"


def place_of(value) -> CPUPlace | GPUPlace:
    """The place a value lives on (CuPy arrays carry their device)."""
    dev = getattr(value, "device", None)
    if dev is not None:
        module = type(value).__module__
        if module.startswith("cupy"):
            return GPUPlace(int(dev.id))
        if module == _STRICT_MODULE:
            return StrictPlace()
    return CPUPlace()


def to_host(value):
    """A NumPy view of a value: device arrays (CuPy's, the strict stand-in's) are copied, the rest pass through."""
    module = type(value).__module__
    if module.startswith("cupy") or module == _STRICT_MODULE:
        return value.get()
    return value
