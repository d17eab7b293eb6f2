"""Write CuPy's public names, one per line, to stdout: the list kernelcore/testing/strict_xp.py
checks its stand-in against (kernelcore/testing/cupy_namespace.txt).

Run with a Python that has CuPy installed (no GPU needed: `import cupy` works without one), e.g.

    python -m venv /tmp/cupyvenv && /tmp/cupyvenv/bin/pip install cupy-cuda12x
    /tmp/cupyvenv/bin/python kernelcore/testing/gen_cupy_namespace.py > kernelcore/testing/cupy_namespace.txt
    /tmp/cupyvenv/bin/python kernelcore/testing/gen_cupy_namespace.py --signatures > kernelcore/testing/cupy_signatures.txt

Standalone on purpose: it imports nothing from kernelcore, so the CuPy venv needs nothing else.
Lines: `cupy.<name>` for the top-level namespace, `cupy.<sub>.<name>` for the submodules kernels may
reach (random, linalg, fft), `cupy.ndarray.<attr>` for array attributes and methods (dunders too, since
which conversions exist matters), `cupy.ndarray.flags.<attr>` for what an array's flags offer,
`cupy.ufunc.<attr>` and `cupy.random.RandomState.<attr>`.
With --signatures: `name(param, ...)` for each top-level function whose signature Python can read (CuPy's
Python-level functions; ufuncs and Cython builtins have none), `*` / `**` marking *args / **kwargs, so the
stand-in can refuse a keyword CuPy's function does not take.
"""
from __future__ import annotations

import cupy

SUBMODULES = ("random", "linalg", "fft", "lib.stride_tricks")
# ndarray.flags: CuPy's Flags offers fewer than NumPy's (no `writeable`: device arrays always are)
CLASSES = {"ndarray": cupy.ndarray, "ndarray.flags": cupy._core.flags.Flags, "ufunc": cupy.ufunc,
           "random.RandomState": cupy.random.RandomState}


def public(obj, dunders=False):
    return sorted(n for n in dir(obj) if not n.startswith("_") or (dunders and n.startswith("__")))


def signature_line(name: str, fn) -> str | None:
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    parts = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            parts.append("*")
        elif p.kind is p.VAR_KEYWORD:
            parts.append("**")
        elif p.kind is p.POSITIONAL_ONLY:
            parts.append(f"/{p.name}")
        elif p.kind is p.KEYWORD_ONLY:
            parts.append(f"={p.name}")
        else:
            parts.append(p.name)
    return f"{name}({', '.join(parts)})"


def signatures() -> None:
    print(f"# CuPy {cupy.__version__} function signatures: name(param, ...); /p positional-only, =p keyword-only, "
          f"* *args, ** **kwargs; regenerate with kernelcore/testing/gen_cupy_namespace.py --signatures")
    for n in public(cupy):
        v = getattr(cupy, n)
        if isinstance(v, (type, cupy.ufunc)) or not callable(v):
            continue
        line = signature_line(n, v)
        if line:
            print(line)


def main() -> None:
    import numpy
    print(f"# CuPy {cupy.__version__} public names (NumPy {numpy.__version__} beside it); "
          f"regenerate with kernelcore/testing/gen_cupy_namespace.py")
    for n in public(cupy):
        print(f"cupy.{n}")
    import importlib
    for sub in SUBMODULES:
        for n in public(importlib.import_module(f"cupy.{sub}")):
            print(f"cupy.{sub}.{n}")
    for cname, cls in CLASSES.items():
        for n in public(cls, dunders=True):
            print(f"cupy.{cname}.{n}")


if __name__ == "__main__":
    import sys
    signatures() if "--signatures" in sys.argv[1:] else main()
