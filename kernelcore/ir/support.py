"""What a program needs that kernelcore lacks, said up front and all at once.

`unsupported_ops(program)` lists every op type with no definition in kernelcore's registry, with where
each occurs (block, op index) and how often; `check_supported` raises one UnknownOpError naming them all
(the executor calls it before preparing a program, so a run never stops at the first of several); loading
a program warns with the same text (UnsupportedOpsWarning) so a notebook says it before anything runs,
and `kernelcore show` and ProgramJSON mark the same ops.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnknownOpError
from .op_names import close_op_types, is_paddle_op
from .op_sources import source_hint
from .registry import all_op_defs, has_op
from ..text_safety import NAME_CHARS_SHOWN, short_name

MAX_PLACES_SHOWN = 4
# The report is sized by what it says, not by the longest name a file holds (a warning is logged and shown
# whole): names are cut after MAX_TYPE_CHARS, at most MAX_TYPES_SHOWN op types get a line, and the column of
# names is padded to the longest shown name only up to TYPE_COLUMN.
MAX_TYPE_CHARS = NAME_CHARS_SHOWN
MAX_TYPES_SHOWN = 40
TYPE_COLUMN = 24


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
    """One line for the lot, then one line per op type (the first MAX_TYPES_SHOWN in program order): count,
    where, and a hint; the op types left out are counted on a last line. Names are shown escaped
    (kernelcore.text_safety) and cut after MAX_TYPE_CHARS."""
    n_ops = sum(u.count for u in unsupported)
    kinds = len(unsupported)
    lines = [f"{kinds} op type{'s' if kinds != 1 else ''} ({n_ops} op{'s' if n_ops != 1 else ''}) "
             f"{'have' if kinds != 1 else 'has'} no kernel in kernelcore:"]
    shown = unsupported[:MAX_TYPES_SHOWN]
    names = [short_name(u.type, MAX_TYPE_CHARS) for u in shown]
    width = min(TYPE_COLUMN, max(map(len, names), default=0))
    for u, name in zip(shown, names):
        lines.append(f"  {name:<{width}}  x{u.count}  at {_where_text(u)}  ({_hint(u)})")
    left = unsupported[MAX_TYPES_SHOWN:]
    if left:
        n_left = sum(u.count for u in left)
        lines.append(f"  ... and {len(left)} more op type{'s' * (len(left) != 1)} ({n_left} op{'s' * (n_left != 1)})")
    return "\n".join(lines)


def _hint(u: UnsupportedOp) -> str:
    source = source_hint(u.type)  # the Paddle function that writes it, where the API sweep saw one
    if u.paddle_op or source:
        return "a PaddlePaddle op kernelcore does not implement" + source
    if u.suggestions:
        return f"not a PaddlePaddle op; did you mean {', '.join(map(repr, u.suggestions))}?"
    return "not a PaddlePaddle op either"


def check_supported(program, what: str = "this program") -> None:
    """Raise one UnknownOpError naming every unsupported op of `program`; its `.unsupported` lists them."""
    found = unsupported_ops(program)
    if found:
        err = UnknownOpError(f"{what} cannot run: {describe(found)}")
        err.unsupported = tuple(found)
        raise err
