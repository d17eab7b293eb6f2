"""The names a debugger may be asked about: a program's variables and op types, and the names a kernel that
runs its own steps (the fused rnn) binds though no block declares them; unknown names are refused with the
closest ones."""
from __future__ import annotations

import difflib

from ..errors import UnknownNameError
from ..ir.program import Program


# what the fused rnn op's kernel binds and writes in each step scope (kernelcore/ops/rnn.py, RnnStep): names
# a debugger may be asked about though no block declares them
_RNN_STEP_NAMES = frozenset({"x_proj", "h_prev", "c_prev", "mask", "gates", "h", "c"})


def program_names(program: Program) -> tuple[set[str], set[str]]:
    """(variable names, op types) of `program`: every block's variables and op arguments, and for ops whose
    kernel runs its own steps (the fused rnn), the step's op type and the names it binds."""
    names: set[str] = set()
    op_types: set[str] = set()
    for block in program.desc.blocks:
        names.update(v.name for v in block.vars)
        for op in block.ops:
            op_types.add(op.type)
            for slots in (op.inputs, op.outputs):
                for slot in slots:
                    names.update(slot.arguments)
    if "rnn" in op_types:
        from ..ops.rnn import CELL_TYPES
        op_types.update(CELL_TYPES.values())
        names.update(_RNN_STEP_NAMES)
    return names, op_types


def check_known(name: str, known, what: str) -> None:
    """Raise UnknownNameError, with the closest names, when `name` is not among `known`."""
    if name in known:
        return
    close = difflib.get_close_matches(str(name), sorted(map(str, known)), n=3, cutoff=0.6)
    raise UnknownNameError(what, name, close)
