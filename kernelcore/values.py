"""What the engine asks of a runtime value, asked in one place (NaN hunting, the debugger's stops)."""
from __future__ import annotations


def nonfinite(xp, value) -> str | None:
    """"NaN" or "Inf" when a floating-point (or complex) array holds one (NaN named first), else None.
    Anything that is not such an array (ints, lists, nothing) is finite. Reads stay on the device
    except for the one boolean."""
    dt = getattr(value, "dtype", None)
    if dt is None or dt.kind not in "fc":
        return None
    if bool(xp.isfinite(value).all()):
        return None
    return "NaN" if bool(xp.isnan(value).any()) else "Inf"
