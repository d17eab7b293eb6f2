"""Where a paused run stands: a `Frame` per level of the block/op stack, the `Position` they make, the `Pause`
a session keeps for every stop, and the one way a place in a run is written (`frame_text`)."""
from __future__ import annotations

from typing import NamedTuple

from ..runtime.executor import ExecContext
from ..ops.rnn import CellStep

END_OF_BLOCK = "end of block"
# control-flow ops whose outputs their sub-block writes (the op's own op_run event comes after those writes)
BLOCK_WRITERS = frozenset({"while", "conditional_block"})  # the op_type of the pause after a sub-block's last op


class Frame(NamedTuple):  # a NamedTuple, not a frozen dataclass: one is made per level at every pause
    """One level of the block/op stack: the op about to run in a block (op_type END_OF_BLOCK: the block's
    last op has run; `op` is then the number of ops in the block)."""
    block: int
    op: int
    op_type: str
    timestep: int | None  # the timestep this block runs for (None outside loops)
    scope: int
    detail: str | None = None  # which pass of a kernel's own steps: the fused rnn's "layer 1 bwd"

    @property
    def at_end(self) -> bool:
        return self.op_type == END_OF_BLOCK

    def to_json(self) -> dict:
        return {"block": self.block, "op": self.op, "op_type": self.op_type, "timestep": self.timestep,
                "scope": self.scope, "end": self.at_end, "detail": self.detail}

    def __str__(self) -> str:
        return frame_text(self.block, self.op, self.op_type, self.timestep, self.detail)

    __repr__ = __str__  # a frame shown as a cell's value reads as the sidebar shows it

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


class Position(NamedTuple):  # one is made at every pause
    frames: tuple[Frame, ...]  # outermost first; empty when the run has ended

    @property
    def depth(self) -> int:
        return len(self.frames)

    @property
    def innermost(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    @property
    def timestep(self) -> int | None:
        """The timestep of the innermost loop this position is in (None outside loops)."""
        return next((f.timestep for f in reversed(self.frames) if f.timestep is not None), None)

    @property
    def ended(self) -> bool:
        return not self.frames

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.frames]

    def __str__(self) -> str:
        return " > ".join(map(str, self.frames)) if self.frames else "end of the run"

    __repr__ = __str__  # `sess.position` as a cell's value: the text the sidebar and widgets show

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


def frame_text(block: int, op: int, op_type: str, timestep: int | None = None, detail: str | None = None) -> str:
    """The one way a place in a run is written (sidebar, widgets, reprs, stop reasons): block, op, the
    pass of a kernel's own steps, timestep ("block 0 op #3 lstm_cell layer 1 fwd t=0")."""
    t = f" t={timestep}" if timestep is not None else ""
    if op_type == END_OF_BLOCK:
        return f"block {block} end{t}"
    d = f" {detail}" if detail else ""
    return f"block {block} op #{op} {op_type}{d}{t}"


_tuple_new = tuple.__new__  # builds a NamedTuple from its fields without its Python-level __new__


def position_of(ctx: ExecContext | None) -> Position:
    """Where the run is paused, from the paused context up to block 0 (made at every pause)."""
    frames = []
    while ctx is not None:
        op = ctx.op
        if op is None:
            n = len(ctx.program.desc.blocks[ctx.block].ops)
            frames.append(_tuple_new(Frame, (ctx.block, n, END_OF_BLOCK, ctx.timestep, ctx.scope.id, None)))
        else:
            detail = op.detail if type(op) is CellStep else None
            frames.append(_tuple_new(Frame, (ctx.block, op.idx, op.type, ctx.timestep, ctx.scope.id, detail)))
        ctx = ctx.parent
    frames.reverse()
    return _tuple_new(Position, (tuple(frames),))


def block_run(frame: Frame) -> tuple:
    """What tells one run of a block from the next: a loop runs its block once per timestep, each in its own
    step scope (a while may reuse one scope: its timestep still differs)."""
    return frame.block, frame.scope, frame.timestep


class Pause(NamedTuple):
    """A place the run stopped: right after trace event `index`, at `position`."""
    index: int
    position: Position



def pause_at(index: int, ctx: ExecContext | None) -> Pause:
    """The pause right after trace event `index`, with the run paused in `ctx` (made at every pause)."""
    return _tuple_new(Pause, (index, position_of(ctx)))
