"""The one switch of every fast path, and the fast kernels the executor picks when it prepares an op.

Each op has one kernel over `xp` (kernelcore/ops/<family>.py, kernelcore/grad/<family>.py): the reference, the one
the GPU runs and the tests compare with. A fast variant of it (a C kernel from kernelcore/native, or the same work
in parts on the cores) registers apart, for (CPU, float32), with `fast_kernel(op_type, gate)`: `gate(xp, ins,
attrs)` says from the actual inputs whether the variant takes them (host float32 arrays, contiguous, a shape it
has a loop for), and where it says no the reference runs. The executor asks `choose` once per op when it prepares a
block, so a kernel body never branches on a library or a thread count.

The switch: KERNELCORE_NATIVE=off in the environment, or `switched_off()` around a piece of code, turns every
fast path off at once: no variant is chosen, every C gate (kernelcore/native `enabled`) says no, and no op splits
into parts (kernelcore/runtime/cpu_parts.py). Programs prepared while it was on are prepared again.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

ENV = "KERNELCORE_NATIVE"
OFF_VALUES = ("off", "0", "no", "false")

# read once: a variable changed after import would leave prepared programs and loaded libraries disagreeing
_OFF_IN_ENVIRONMENT = os.environ.get(ENV, "").strip().lower() in OFF_VALUES
_held_off = 0  # how many `switched_off()` blocks are open


def enabled() -> bool:
    """Whether fast paths may run: not switched off in the environment or by `switched_off()`."""
    return not _OFF_IN_ENVIRONMENT and _held_off == 0


@contextmanager
def switched_off() -> Iterator[None]:
    """Every fast path off inside the block: the reference kernels alone, one part per op."""
    global _held_off
    _held_off += 1
    try:
        yield
    finally:
        _held_off -= 1


@dataclass(frozen=True)
class FastKernel:
    op_type: str
    gate: Callable  # gate(xp, ins, attrs) -> whether `run` takes these inputs
    run: Callable  # run(ctx, ins, attrs) -> outs, the reference's outputs

    def over(self, reference: Callable) -> Callable:
        """The kernel the executor calls: this variant where its gate says yes, else the reference. It keeps the
        reference's name, which traces and errors show."""
        gate, run = self.gate, self.run

        def kernel(ctx, ins, attrs):
            if gate(ctx.xp, ins, attrs):
                return run(ctx, ins, attrs)
            return reference(ctx, ins, attrs)
        kernel.__name__, kernel.__qualname__, kernel.__module__ = (
            reference.__name__, reference.__qualname__, reference.__module__)
        kernel.reference, kernel.fast = reference, self
        return kernel


_FAST: dict[tuple[str, str, str], FastKernel] = {}


def fast_kernel(op_type: str, gate: Callable, place: str = "cpu", dtype: str = "float32"):
    """Decorator: register `run(ctx, ins, attrs)` as the fast variant of `op_type`'s kernel on `place` for inputs
    of `dtype`, taken where `gate(xp, ins, attrs)` says so."""
    def register(run):
        _FAST[(op_type, place, dtype)] = FastKernel(op_type, gate, run)
        return run
    return register


def registered() -> dict[tuple[str, str, str], FastKernel]:
    """(op type, place, dtype) -> its fast variant, for tests and `kernelcore env`."""
    return dict(_FAST)


# (op type, place) -> over(form) -> the fast version of an op's specialised form (ir/registry.py OpDef.specialize)
_FAST_FORMS: dict[tuple[str, str], Callable] = {}


def fast_form(op_type: str, place: str = "cpu"):
    """Decorator: register `over(form)`, which takes the specialised form the op's reference specializer made
    when the op was prepared (a function of the input values) and returns its fast version (or the form itself
    where it has none). Like a fast kernel, the fast form sends what it cannot take to `form`."""
    def register(over):
        _FAST_FORMS[(op_type, place)] = over
        return over
    return register


def choose_form(op_type: str, place_kind: str, form: Callable | None) -> Callable | None:
    """The specialised form to prepare: its fast version while the switch is on, else `form` (None stays None:
    the op runs its kernel)."""
    over = _FAST_FORMS.get((op_type, place_kind)) if form is not None and enabled() else None
    return form if over is None else over(form)


def choose(op_type: str, place_kind: str, dtype_name: str | None, reference: Callable) -> Callable:
    """The kernel to prepare for an op whose first input is declared `dtype_name` (None: not declared, which the
    gate then checks at run time): its fast variant over `reference` while the switch is on, else `reference`."""
    if not enabled():
        return reference
    fast = _FAST.get((op_type, place_kind, dtype_name or "float32"))
    return reference if fast is None else fast.over(reference)
