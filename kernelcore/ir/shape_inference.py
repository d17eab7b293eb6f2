"""Shape and dtype inference when an op is appended.

An op's `infer_shape(ic)` reads its inputs' declared shapes and dtypes and sets
its outputs'. Unknown dimensions are -1; an input whose shape is not declared
makes inference skip that op (nothing can be said yet). A contradiction raises
ShapeError naming the op, the slots and what was expected versus given.
"""
from __future__ import annotations

from . import dtypes
from ..errors import ShapeError


class _Unknown(Exception):
    """An input's shape or dtype is not declared: skip inference for this op."""


class InferShapeContext:
    def __init__(self, block, desc, opdef, where: str):
        self.block, self.desc, self.opdef, self.where = block, desc, opdef, where
        self._attrs = None

    # -- reading ----------------------------------------------------------
    def _names(self, vs, slot):
        return next((list(v.arguments) for v in vs if v.parameter == slot), [])

    def has_input(self, slot: str) -> bool:
        return bool(self._names(self.desc.inputs, slot))

    def input_names(self, slot: str) -> list[str]:
        return self._names(self.desc.inputs, slot)

    def output_names(self, slot: str) -> list[str]:
        """The variables an output slot names (split checks their count against num/sections)."""
        return self._names(self.desc.outputs, slot)

    def _var(self, slot: str, i: int):
        names = self._names(self.desc.inputs, slot)
        if i >= len(names):
            raise _Unknown()
        v = self.block.find_var_recursive(names[i])
        if v is None or v.shape is None:
            raise _Unknown()
        return v

    def shape(self, slot: str, i: int = 0) -> tuple[int, ...]:
        return self._var(slot, i).shape

    def dtype(self, slot: str, i: int = 0) -> int:
        return self._var(slot, i).dtype

    def shapes(self, slot: str) -> list[tuple[int, ...]]:
        return [self.shape(slot, i) for i in range(len(self.input_names(slot)))]

    def attr(self, name: str):
        if self._attrs is None:
            from . import attrs as attrlib
            self._attrs = {a.name: attrlib.read(a) for a in self.desc.attrs}
        return self._attrs.get(name)

    # -- writing ----------------------------------------------------------
    def set_output(self, slot: str, shape, dtype, i: int = 0) -> None:
        names = self._names(self.desc.outputs, slot)
        if i >= len(names):
            return  # a dispensable output not asked for
        v = self.block.find_var_recursive(names[i])
        v.set_shape([int(d) for d in shape], dtype)

    def fail(self, message: str):
        raise ShapeError(f"{self.where}: {message}")

    # -- helpers ------------------------------------------------------------
    def dtype_name(self, dt: int) -> str:
        return dtypes.type_name(dt)


def infer_op(block, desc, opdef, where: str) -> None:
    ic = InferShapeContext(block, desc, opdef, where)
    try:
        opdef.infer_shape(ic)
    except _Unknown:
        pass


def dims_match(a: int, b: int) -> bool:
    return a == b or a < 0 or b < 0


def broadcast_shapes(x, y, axis: int, ic: InferShapeContext) -> tuple[int, ...]:
    """Paddle's elementwise broadcast: y's dims align with x's starting at `axis`
    (-1: align trailing dims). Either side may be the larger one."""
    if len(x) < len(y):
        big, small, swapped = y, x, True
    else:
        big, small, swapped = x, y, False
    ax = len(big) - len(small) if axis == -1 else axis
    if not 0 <= ax <= len(big) - len(small):
        ic.fail(f"axis {axis} does not fit shapes {list(x)} and {list(y)}")
    out = list(big)
    for k, d in enumerate(small):
        b = big[ax + k]
        if dims_match(b, d) or d == 1 or b == 1:
            out[ax + k] = max(b, d) if b >= 0 and d >= 0 else (b if b >= 0 and d == 1 else d if d >= 0 and b == 1 else -1)
        else:
            names = ("Y", "X") if swapped else ("X", "Y")
            ic.fail(f"cannot broadcast {names[0]} {list(big)} with {names[1]} {list(small)} at axis {ax}: "
                    f"dim {ax + k} is {b} versus {d}")
    return tuple(out)
