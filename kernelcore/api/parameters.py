"""Parameters of the layers: each is declared (persistable) in the main program's global block and given its first
value by an op in the startup program (uniform_random / gaussian_random / fill_constant), so running the startup
program once initialises every parameter. Names follow Paddle: the layer `fc_0` has the weight `fc_0.w_0` and the
bias `fc_0.b_0`. kc.layers offers these names."""
from __future__ import annotations

import math

from ..errors import ProgramError
from ..ir.program import Block, Variable, default_main_program, default_startup_program

__all__ = ["ParamAttr", "Initializer", "ConstantInitializer", "UniformInitializer", "NormalInitializer",
           "XavierInitializer", "create_parameter"]


class Initializer:
    """Appends the op that gives a parameter its first value, to the startup program's global block."""

    def __call__(self, var: Variable, block: Block) -> None:
        raise NotImplementedError

    def _fan(self, shape) -> tuple[int, int]:
        """Paddle's fan_in/fan_out: [in, out] for a 2-D weight; receptive field times channels beyond."""
        shape = [int(d) for d in shape]
        if not shape:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        receptive = math.prod(shape[2:])
        return shape[1] * receptive, shape[0] * receptive


class ConstantInitializer(Initializer):
    def __init__(self, value: float = 0.0):
        self.value = float(value)

    def __call__(self, var, block):
        block.append_op("fill_constant", outputs={"Out": [var]},
                        attrs={"shape": list(var.shape), "dtype": var.dtype, "value": self.value,
                               "str_value": repr(self.value)})


class UniformInitializer(Initializer):
    """Uniform in [low, high); seed 0 draws from the executor's generator (Executor.seed)."""

    def __init__(self, low: float = -1.0, high: float = 1.0, seed: int = 0):
        self.low, self.high, self.seed = float(low), float(high), int(seed)

    def __call__(self, var, block):
        block.append_op("uniform_random", outputs={"Out": [var]},
                        attrs={"shape": list(var.shape), "dtype": var.dtype, "min": self.low, "max": self.high,
                               "seed": self.seed})


class NormalInitializer(Initializer):
    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0):
        self.loc, self.scale, self.seed = float(loc), float(scale), int(seed)

    def __call__(self, var, block):
        block.append_op("gaussian_random", outputs={"Out": [var]},
                        attrs={"shape": list(var.shape), "dtype": var.dtype, "mean": self.loc, "std": self.scale,
                               "seed": self.seed})


class XavierInitializer(Initializer):
    """Glorot: uniform in ±sqrt(6 / (fan_in + fan_out)), or normal with std sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, uniform: bool = True, fan_in: int | None = None, fan_out: int | None = None, seed: int = 0):
        self.uniform, self.fan_in, self.fan_out, self.seed = uniform, fan_in, fan_out, int(seed)

    def __call__(self, var, block):
        f_in, f_out = self._fan(var.shape)
        f_in = self.fan_in if self.fan_in is not None else f_in
        f_out = self.fan_out if self.fan_out is not None else f_out
        if self.uniform:
            limit = math.sqrt(6.0 / (f_in + f_out))
            UniformInitializer(-limit, limit, self.seed)(var, block)
        else:
            NormalInitializer(0.0, math.sqrt(2.0 / (f_in + f_out)), self.seed)(var, block)


class ParamAttr:
    """How a layer makes one parameter: its name (default: Paddle's `<layer>.w_N` / `.b_N`), its
    initializer (default: the layer's — Xavier for weights, zeros for biases) and whether it trains."""

    def __init__(self, name: str | None = None, initializer: Initializer | None = None, trainable: bool = True):
        self.name, self.initializer, self.trainable = name, initializer, trainable

    @staticmethod
    def of(attr) -> ParamAttr | None:
        """None -> defaults; False -> no parameter; a string -> a name; an Initializer -> that initializer."""
        if attr is False:
            return None
        if attr is None or attr is True:
            return ParamAttr()
        if isinstance(attr, ParamAttr):
            return attr
        if isinstance(attr, str):
            return ParamAttr(name=attr)
        if isinstance(attr, Initializer):
            return ParamAttr(initializer=attr)
        if isinstance(attr, dict):
            return ParamAttr(**attr)
        raise TypeError(f"a parameter attribute is None, False, a name, an Initializer, a dict or a ParamAttr; "
                        f"got {type(attr).__name__}")


def create_parameter(shape, dtype="float32", attr=None, default_initializer: Initializer | None = None,
                     prefix: str = "param", suffix: str = "w") -> Variable:
    """A parameter in the main program's global block, initialised in the startup program. Reusing a
    name (ParamAttr(name=...)) shares the parameter: the existing one is returned when shapes agree."""
    attr = ParamAttr.of(attr) or ParamAttr()
    main = default_main_program()
    gblock = main.global_block()
    name = attr.name or main.unique_name(f"{prefix}.{suffix}")
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise ProgramError(f"parameter {name!r}: every dim must be known, got shape {shape} (declare the "
                           f"input's feature dims)")
    if gblock.has_var(name):
        existing = gblock.var(name)
        if list(existing.shape or ()) != shape:
            raise ProgramError(f"parameter {name!r} exists with shape {list(existing.shape or ())}; "
                               f"this layer wants {shape}")
        return existing
    param = gblock.create_parameter(name, shape, dtype, stop_gradient=not attr.trainable)
    startup = default_startup_program().global_block()
    if not startup.has_var(name):
        init_var = startup.create_var(name, shape, dtype, persistable=True)
        (attr.initializer or default_initializer or XavierInitializer())(init_var, startup)
    return param
