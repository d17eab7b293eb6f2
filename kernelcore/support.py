"""What a program needs that kernelcore lacks, said up front and all at once.

`unsupported_ops(program)` lists every op type with no definition in kernelcore's registry, with where
each occurs (block, op index) and how often; `check_supported` raises one UnknownOpError naming them all
(the executor calls it before preparing a program, so a run never stops at the first of several); loading
a program warns with the same text (UnsupportedOpsWarning) so a notebook says it before anything runs,
and `kernelcore show` and ProgramJSON mark the same ops.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import UnknownOpError
from .op_names import close_op_types, is_paddle_op
from .registry import all_op_defs, has_op

MAX_PLACES_SHOWN = 4


class UnsupportedOpsWarning(UserWarning):
    """A loaded program holds ops kernelcore has no kernel for: it can be shown, not run."""


@dataclass(frozen=True)
class UnsupportedOp:
    type: str
    where: tuple  # ((block, op index), ...) in program order
    paddle_op: bool  # PaddlePaddle registers this op type (so it is not a typo)
    suggestions: tuple  # registered op types it may be a misspelling of

    @property
    def count(self) -> int:
        return len(self.where)

    def to_json(self) -> dict:
        return {"type": self.type, "count": self.count, "where": [list(w) for w in self.where],
                "paddle_op": self.paddle_op, "suggestions": list(self.suggestions)}


def _desc_of(program):
    return getattr(program, "desc", program)


def unsupported_ops(program) -> list[UnsupportedOp]:
    """Every op type in `program` (a Program or a ProgramDesc) that kernelcore does not define."""
    desc = _desc_of(program)
    found: dict[str, list] = {}
    known: dict[str, bool] = {}
    for b in desc.blocks:
        for i, op in enumerate(b.ops):
            ok = known.get(op.type)
            if ok is None:
                ok = known[op.type] = has_op(op.type)
            if not ok:
                found.setdefault(op.type, []).append((b.idx, i))
    if not found:
        return []
    registered = list(all_op_defs())
    return [UnsupportedOp(t, tuple(w), is_paddle_op(t), tuple(close_op_types(t, registered)))
            for t, w in found.items()]


def _where_text(u: UnsupportedOp) -> str:
    by_block: dict[int, list] = {}
    for b, i in u.where[:MAX_PLACES_SHOWN]:
        by_block.setdefault(b, []).append(f"#{i}")
    text = "; ".join(f"block {b} op {', '.join(ix)}" for b, ix in by_block.items())
    if u.count > MAX_PLACES_SHOWN:
        text += f" and {u.count - MAX_PLACES_SHOWN} more"
    return text


def describe(unsupported: list[UnsupportedOp]) -> str:
    """One line for the lot, then one line per op type: count, where, and a hint."""
    n_ops = sum(u.count for u in unsupported)
    kinds = len(unsupported)
    lines = [f"{kinds} op type{'s' if kinds != 1 else ''} ({n_ops} op{'s' if n_ops != 1 else ''}) "
             f"{'have' if kinds != 1 else 'has'} no kernel in kernelcore:"]
    width = max(len(u.type) for u in unsupported)
    for u in unsupported:
        if u.paddle_op:
            hint = "a PaddlePaddle op kernelcore does not implement"
        elif u.suggestions:
            hint = f"not a PaddlePaddle op; did you mean {', '.join(map(repr, u.suggestions))}?"
        else:
            hint = "not a PaddlePaddle op either"
        lines.append(f"  {u.type:<{width}}  x{u.count}  at {_where_text(u)}  ({hint})")
    return "\n".join(lines)


def check_supported(program, what: str = "this program") -> None:
    """Raise one UnknownOpError naming every unsupported op of `program`; its `.unsupported` lists them."""
    found = unsupported_ops(program)
    if found:
        err = UnknownOpError(f"{what} cannot run: {describe(found)}")
        err.unsupported = tuple(found)
        raise err
