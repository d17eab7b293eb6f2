"""The exceptions a user can cause. Each names what was expected and what was given.

Everything derives from KernelcoreError so a caller can catch one type; the
subclasses also derive from the matching builtin (KeyError, TypeError,
ValueError) so generic handlers keep working.
"""
from __future__ import annotations

import os
import traceback

from .text_safety import NAME_CHARS_SHOWN, quote_name, short_name

# IPython shows a KernelcoreError without kernelcore's own frames (see KernelcoreError._render_traceback_);
# True shows the whole traceback again, for working on kernelcore itself
SHOW_INTERNAL_FRAMES = False
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_IPYTHON_RUNNER = os.path.join("IPython", "core", "interactiveshell.py")  # the frame that exec()s a cell


class KernelcoreError(Exception):
    """Base of every error kernelcore raises on purpose."""

    def _render_traceback_(self) -> list[str]:
        """The traceback IPython shows for this error (it asks an exception for this before formatting one
        itself): the caller's frames, then the message. Kernelcore's own frames are left out: they only say
        where a check sits, and pushed the one line that says what is wrong below three or four of them."""
        return short_traceback(self)


def short_traceback(error: BaseException) -> list[str]:
    """`error`'s traceback as lines, without the frames inside kernelcore (and IPython's cell runner)."""
    if SHOW_INTERNAL_FRAMES:
        return [line.rstrip("\n") for line in traceback.format_exception(type(error), error, error.__traceback__)]
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith(_PACKAGE_DIR) and not f.filename.endswith(_IPYTHON_RUNNER)]
    lines = ["Traceback (most recent call last, kernelcore's own frames left out):"] if frames else []
    lines += [entry.rstrip("\n") for entry in traceback.format_list(frames)]
    return lines + [f"{type(error).__name__}: {error}"]


class ProgramError(KernelcoreError, ValueError):
    """A program is malformed: a missing block, a name clash, an unknown variable."""


class UnknownOpError(ProgramError):
    """An op type no registry entry knows. Raised for a whole program, it names every such op and
    `unsupported` lists them (kernelcore.ir.support.UnsupportedOp)."""
    unsupported: tuple = ()


class OpValidationError(ProgramError):
    """An op does not match its OpProto: a slot, an argument count or an attribute."""


class AttrError(OpValidationError, TypeError):
    """An attribute of the wrong type, or one that fails its check (e.g. larger-than)."""


class ShapeError(OpValidationError):
    """Shapes or dtypes that an op cannot accept, found by shape inference."""


class ScopeError(KernelcoreError, KeyError):
    """A scope was asked for a variable it does not hold, or was used after being dropped."""

    def __str__(self) -> str:  # KeyError quotes its message; people want it plain.
        return str(self.args[0]) if self.args else ""


class LoadError(KernelcoreError, ValueError):
    """A file could not be read as a program, a trace or a parameter stream."""


class DtypeError(KernelcoreError, TypeError):
    """A data type kernelcore cannot hold in an array here (bfloat16, float8, strings, RAW)."""


class FeedError(KernelcoreError, ValueError):
    """A value fed to a program that cannot become the tensor its variable declares."""


class TraceError(LoadError):
    """A trace file (or trace JSON) that does not follow the trace schema."""


class PlaceError(KernelcoreError, RuntimeError):
    """A place that is unavailable here (a GPU without CuPy or a driver), or mixed places."""


def describe_op(op_type: str, block_idx: int, op_idx: int) -> str:
    return f"op {quote_name(op_type, NAME_CHARS_SHOWN)} (block {block_idx}, op #{op_idx})"


class OpRunError(KernelcoreError, RuntimeError):
    """An op failed while running. The scope is left as it was at the failure.

    Attributes name the op (type, block, index), the variable involved when one is,
    and the inputs as (name, shape, dtype) so the message says what was given.
    """

    def __init__(self, message: str, *, op_type: str, block_idx: int, op_idx: int,
                 var_name: str | None = None, inputs: tuple = (), timestep: int | None = None):
        self.op_type, self.block_idx, self.op_idx = op_type, block_idx, op_idx
        self.var_name, self.inputs, self.timestep = var_name, inputs, timestep
        where = describe_op(op_type, block_idx, op_idx)
        if timestep is not None:
            where += f" at timestep {timestep}"
        text = f"{where}: {message}"
        if inputs:
            given = ", ".join(f"{short_name(slot, NAME_CHARS_SHOWN)}={short_name(name, NAME_CHARS_SHOWN)}"
                              f"{_shape(shape, dtype)}" for slot, name, shape, dtype in inputs)
            text += f"\n  inputs: {given}"
        super().__init__(text)


def _shape(shape, dtype) -> str:
    if shape is None:
        return "<no value>"
    return f"[{', '.join(map(str, shape))}] {dtype}"


class NonFiniteError(OpRunError, FloatingPointError):
    """An op produced NaN or Inf (found by check_nan_inf / a NaN breakpoint)."""


class UnknownNameError(KernelcoreError, KeyError):
    """A debugger command named a variable or op type the program does not have (gdb: No symbol "h" in
    current context). `close` holds the program's names nearest to the one given."""

    def __init__(self, what: str, name: str, close: list | tuple = ()):
        self.what, self.name, self.close = what, name, tuple(close)
        shown = ", ".join(quote_name(c, NAME_CHARS_SHOWN) for c in self.close)
        hint = f"; did you mean {shown}?" if self.close else ""
        super().__init__(f"the program has no {what} {quote_name(name, NAME_CHARS_SHOWN)}{hint}")

    def __str__(self) -> str:  # KeyError quotes its message; people want it plain.
        return str(self.args[0]) if self.args else ""
