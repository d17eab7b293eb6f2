"""Optimizers: one optimizer op per (parameter, gradient) pair.

    opt = kc.optimizer.Adam(learning_rate=1e-3)
    params_grads = opt.minimize(avg_loss)            # append_backward, then the update ops

`minimize(loss)` = `kc.append_backward(loss)` + `apply_gradients(params_grads)`. The learning rate is a
persistable 0-d variable (`learning_rate_N`), and each accumulator (velocity, moments, beta powers) a
persistable variable named after its parameter (`fc_0.w_0_moment1_0`), all given their first values by
`fill_constant` ops in the startup program, as Paddle names and initialises them. Update ops carry
op_role=2 (Paddle's Optimize role) and op_role_var=[param, grad].
"""
from __future__ import annotations

from ..errors import ProgramError
from ..ir import op_roles
from ..ir.program import Program, Variable, default_startup_program

__all__ = ["Optimizer", "SGD", "Momentum", "Adam"]


class Optimizer:
    op_type = ""

    def __init__(self, learning_rate: float = 0.001, name: str | None = None):
        if not isinstance(learning_rate, (int, float)) or learning_rate < 0:
            raise ValueError(f"learning_rate must be a number >= 0, got {learning_rate!r}")
        self.learning_rate = float(learning_rate)
        self.name = name
        self._lr_vars: dict[int, Variable] = {}  # id(program) -> its learning-rate variable

    # -- the public calls --------------------------------------------------------------------------
    def minimize(self, loss: Variable, startup_program: Program | None = None, parameter_list=None,
                 no_grad_set=None) -> list[tuple[Variable, Variable]]:
        """Append the backward ops for `loss`, then one update op per parameter; return (param, grad) pairs."""
        from .backward import append_backward
        if not isinstance(loss, Variable):
            raise TypeError(f"minimize takes the loss Variable, got {type(loss).__name__}")
        params_grads = append_backward(loss, parameter_list=parameter_list, no_grad_set=no_grad_set)
        self.apply_gradients(params_grads, loss.block.program, startup_program)
        return params_grads

    def apply_gradients(self, params_grads, program: Program | None = None,
                        startup_program: Program | None = None) -> list:
        """Append the update ops for (param, grad) pairs to `program`'s global block (the pairs' program by
        default); their accumulators are initialised in `startup_program` (default: the current one)."""
        params_grads = [(p, g) for p, g in params_grads if g is not None]
        if not params_grads:
            raise ProgramError("nothing to optimize: no parameter has a gradient")
        program = program or params_grads[0][0].block.program
        startup = startup_program or default_startup_program()
        block = program.global_block()
        lr = self._lr_var(program, startup)
        ops = []
        for p, g in params_grads:
            p = block.var(p.name) if isinstance(p, Variable) else block.var(p)
            g = block.find_var_recursive(g.name if isinstance(g, Variable) else g)
            ops.append(self._append_update(block, startup, p, g, lr))
        return ops

    # -- pieces --------------------------------------------------------------------------------------
    def _lr_var(self, program: Program, startup: Program) -> Variable:
        v = self._lr_vars.get(id(program))
        if v is not None and v.block.program is program:
            return v
        name = program.unique_name("learning_rate")
        v = _persistable(program, startup, name, [], "float32", self.learning_rate)
        self._lr_vars[id(program)] = v
        return v

    def _accumulator(self, block, startup, param: Variable, what: str, value: float = 0.0, shape=None) -> Variable:
        """`<param>_<what>_N`, persistable, filled with `value` by the startup program."""
        name = block.program.unique_name(f"{param.name}_{what}")
        return _persistable(block.program, startup, name, list(param.shape) if shape is None else shape,
                            param.dtype_name or "float32", value)

    def _append_update(self, block, startup, param, grad, lr):
        raise NotImplementedError

    @staticmethod
    def _role(param, grad) -> dict:
        return {"op_role": op_roles.OPTIMIZE, "op_role_var": [param.name, grad.name]}


def _persistable(program: Program, startup: Program, name: str, shape, dtype, value: float) -> Variable:
    v = program.global_block().create_var(name, shape, dtype, persistable=True, stop_gradient=True)
    sb = startup.global_block()
    if not sb.has_var(name):
        sv = sb.create_var(name, shape, dtype, persistable=True, stop_gradient=True)
        sb.append_op("fill_constant", outputs={"Out": [sv]},
                     attrs={"shape": list(shape), "dtype": sv.dtype, "value": float(value),
                            "str_value": repr(float(value))})
    return v


class SGD(Optimizer):
    """ParamOut = Param - learning_rate * Grad (an `sgd` op per parameter)."""
    op_type = "sgd"

    def _append_update(self, block, startup, param, grad, lr):
        return block.append_op("sgd", inputs={"Param": [param], "LearningRate": [lr], "Grad": [grad]},
                               outputs={"ParamOut": [param]}, attrs=self._role(param, grad))


class Momentum(Optimizer):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity (Nesterov: see the op)."""
    op_type = "momentum"

    def __init__(self, learning_rate: float = 0.001, momentum: float = 0.9, use_nesterov: bool = False,
                 weight_decay: float | None = None, name: str | None = None):
        super().__init__(learning_rate, name)
        self.momentum, self.use_nesterov, self.weight_decay = float(momentum), bool(use_nesterov), weight_decay

    def _append_update(self, block, startup, param, grad, lr):
        vel = self._accumulator(block, startup, param, "velocity")
        attrs = {"mu": self.momentum, "use_nesterov": self.use_nesterov, **self._role(param, grad)}
        if self.weight_decay:
            attrs.update(regularization_method="l2_decay", regularization_coeff=float(self.weight_decay))
        return block.append_op("momentum",
                               inputs={"Param": [param], "Grad": [grad], "Velocity": [vel], "LearningRate": [lr]},
                               outputs={"ParamOut": [param], "VelocityOut": [vel]}, attrs=attrs)


class Adam(Optimizer):
    """Adam (Kingma & Ba) with Paddle's folded bias correction; see the `adam` op."""
    op_type = "adam"

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_mode: bool = False, name: str | None = None):
        super().__init__(learning_rate, name)
        for what, v in (("beta1", beta1), ("beta2", beta2)):
            if not 0 <= v < 1:
                raise ValueError(f"{what} must lie in [0, 1), got {v}")
        if epsilon < 0:
            raise ValueError(f"epsilon must be >= 0, got {epsilon}")
        self.beta1, self.beta2, self.epsilon, self.lazy_mode = float(beta1), float(beta2), float(epsilon), lazy_mode

    def _append_update(self, block, startup, param, grad, lr):
        m1 = self._accumulator(block, startup, param, "moment1")
        m2 = self._accumulator(block, startup, param, "moment2")
        # beta^t for t = 1 at the first step: the pows start at beta and are multiplied after each step
        b1p = self._accumulator(block, startup, param, "beta1_pow_acc", self.beta1, shape=[1])
        b2p = self._accumulator(block, startup, param, "beta2_pow_acc", self.beta2, shape=[1])
        return block.append_op(
            "adam",
            inputs={"Param": [param], "Grad": [grad], "LearningRate": [lr], "Moment1": [m1], "Moment2": [m2],
                    "Beta1Pow": [b1p], "Beta2Pow": [b2p]},
            outputs={"ParamOut": [param], "Moment1Out": [m1], "Moment2Out": [m2], "Beta1PowOut": [b1p],
                     "Beta2PowOut": [b2p]},
            attrs={"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon, "lazy_mode": self.lazy_mode,
                   **self._role(param, grad)})
