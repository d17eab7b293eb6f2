"""Breakpoints a session stops at: before an op (by type or place), after a write, after the first NaN/Inf."""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.values import nonfinite


@dataclass
class Breakpoint:
    id: int
    op_type: str | None = None
    block: int | None = None
    op: int | None = None
    write: str | None = None
    nan: bool = False
    enabled: bool = True

    @property
    def kind(self) -> str:
        return "nan" if self.nan else "write" if self.write is not None else "op_type" if self.op_type else "op"

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "op_type": self.op_type, "block": self.block, "op": self.op,
                "write": self.write, "enabled": self.enabled, "text": str(self)}

    def __str__(self) -> str:
        if self.nan:
            return f"#{self.id} first NaN/Inf"
        if self.write is not None:
            return f"#{self.id} write to {self.write!r}"
        if self.op_type is not None:
            return f"#{self.id} op type {self.op_type!r}"
        return f"#{self.id} block {self.block} op #{self.op}"



def has_non_finite(ev, xp) -> bool:
    return any(nonfinite(xp, value) for _, value in ev.values or ())


def non_finite_text(ev, xp) -> str:
    bad = [name for name, v in ev.values or () if nonfinite(xp, v)]
    where = f"op {ev.op_type!r} (block {ev.block}, op #{ev.op})"
    if ev.timestep is not None:
        where += f" at timestep {ev.timestep}"
    ins = ", ".join(f"{slot}={name}{list(shape) if shape is not None else ''}" for slot, name, shape, _ in ev.inputs)
    return f"{where} wrote NaN/Inf to {', '.join(map(repr, bad))}; its inputs: {ins}"
