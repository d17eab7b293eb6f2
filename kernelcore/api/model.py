"""The high-level Model: a scope, an init network, a network, and layer calls that build both.

    model = kc.Model()
    hidden = model.fc_layer(input="img", size=200, activation="sigmoid", input_dim=64)
    prob = model.fc_layer(input=hidden, size=10, activation="softmax")
    avg_loss = model.mean(model.cross_entropy(input=prob, label="label"))
    model.backward(avg_loss)
    model.sgd(learning_rate=1e-1)
    model.initialize_parameters()                  # runs model.init_network
    for img, lbl in batches:
        model.fill("img", img); model.fill("label", lbl)
        loss, = model.run(fetch=[avg_loss])

or, with the flight recorder over every step (kernelcore/observe/recorder.py):

    result = model.fit(({"img": i, "label": l} for i, l in batches), fetch=[avg_loss], record=True)
    result.recorder.hit          # the first NaN/Inf an op wrote (the loop stopped a step later), or None
    model.recorder               # the same recorder: the last recorded fit's, set as it starts (so the
                                 # Training health panel shows the fit while it runs)

`model.network` and `model.init_network` are ordinary Programs (the main and startup programs of the
layers in kernelcore.api.layers); every layer call builds into them under program_guard.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..formats import paddle_files
from . import layers
from ..transforms import optimizer as optim
from ..errors import FeedError, KernelcoreError, LoadError, ProgramError
from ..observe.recorder import Recorder
from ..runtime.executor import Executor
from ..runtime.place import to_host
from ..ir.program import Program, Variable, program_guard
from ..runtime.scope import Scope, global_scope

__all__ = ["FitResult", "Model"]


# what a dict passed as fit's record= may hold: kc.record's keywords but the program, scope and executor (the model's)
_RECORD_KEYWORDS = frozenset({"keep_last", "nan", "stop", "training", "background"})


@dataclass
class FitResult:
    """What Model.fit ran: `fetched` holds each step's fetched values (as Model.run returns them), `recorder` the
    flight recorder of a recorded fit (None otherwise), `stopped` whether a watch hit ended the loop early."""
    fetched: list = field(default_factory=list)
    recorder: Recorder | None = None

    @property
    def steps(self) -> int:
        return len(self.fetched)

    @property
    def stopped(self) -> bool:
        return self.recorder is not None and self.recorder.hit is not None and self.recorder.stop


class Model:
    def __init__(self, scope: Scope | None = None, place=None):
        self.scope = scope if scope is not None else global_scope()
        self.network = Program()
        self.init_network = Program()
        self.executor = Executor(place)
        self.param_grads: dict[str, str] = {}     # parameter name -> gradient name
        self._feeds: dict[str, object] = {}
        self._loss: Variable | None = None
        self._forward_end: int | None = None     # ops before backward(): the forward pass
        self._optimized = False
        self.recorder: Recorder | None = None  # the last recorded fit's flight recorder, set as that fit starts

    # -- building ------------------------------------------------------------------------------------
    def _guard(self):
        return program_guard(self.network, self.init_network)

    @property
    def all_params(self) -> list[str]:
        return [v.name for v in self.network.global_block().vars if v.is_parameter]

    def var(self, name: str) -> Variable:
        v = self.network.global_block().find_var_recursive(name)
        if v is None:
            raise ProgramError(f"the model's network declares no variable {name!r}")
        return v

    def data(self, name: str, shape, dtype="float32") -> Variable:
        """Declare an input the model is fed by name (`fill`); -1 dims take any size."""
        with self._guard():
            return layers.data(name, shape, dtype)

    def _input(self, x, *, shape=None, dtype="float32", what="input") -> Variable:
        if isinstance(x, Variable):
            return x
        if not isinstance(x, str):
            raise TypeError(f"{what} takes a Variable or a variable name, got {type(x).__name__}")
        block = self.network.global_block()
        if block.has_var(x):
            return block.var(x)
        if shape is None:
            raise ProgramError(f"{what} {x!r} is not declared yet and its shape is unknown: declare it with "
                               f"model.data({x!r}, shape=[-1, D]) or pass input_dim=D")
        return self.data(x, shape, dtype)

    def fc_layer(self, input, size: int, bias: bool = True, activation: str | None = None, name: str | None = None,
                 input_dim: int | None = None, param_attr=None) -> Variable:
        """A fully connected layer (kernelcore.api.layers.fc). A name string as input is a data variable;
        input_dim declares it ([-1, input_dim]) when the model has not seen it yet."""
        x = self._input(input, shape=[-1, int(input_dim)] if input_dim is not None else None, what="fc_layer input")
        with self._guard():
            return layers.fc(x, size, act=activation, name=name, param_attr=param_attr,
                             bias_attr=None if bias else False)

    def cross_entropy(self, input, label) -> Variable:
        """-log(input[label]) per row; a name string as label is an int64 [-1, 1] data variable."""
        x = self._input(input, what="cross_entropy input")
        lab = self._input(label, shape=[-1, 1], dtype="int64", what="cross_entropy label")
        with self._guard():
            return layers.cross_entropy(x, lab)

    def softmax_with_cross_entropy(self, logits, label) -> Variable:
        x = self._input(logits, what="softmax_with_cross_entropy logits")
        lab = self._input(label, shape=[-1, 1], dtype="int64", what="softmax_with_cross_entropy label")
        with self._guard():
            return layers.softmax_with_cross_entropy(x, lab)

    def mean(self, input) -> Variable:
        with self._guard():
            return layers.mean(self._input(input, what="mean input"))

    def accuracy(self, input, label, k: int = 1) -> Variable:
        x = self._input(input, what="accuracy input")
        lab = self._input(label, shape=[-1, 1], dtype="int64", what="accuracy label")
        with self._guard():
            return layers.accuracy(x, lab, k)

    def dropout(self, input, dropout_prob: float, **kw) -> Variable:
        with self._guard():
            return layers.dropout(self._input(input, what="dropout input"), dropout_prob, **kw)

    # -- training ------------------------------------------------------------------------------------
    def backward(self, from_var) -> dict[str, str]:
        """Append the gradient ops of `from_var` (a Variable or its name) to the network; remember the
        parameter -> gradient names and return them."""
        from ..transforms.backward import append_backward
        loss = self._input(from_var, what="backward from")
        if self._loss is not None:
            raise ProgramError("model.backward() was already called")
        self._forward_end = len(self.network.global_block().ops)
        with self._guard():
            pairs = append_backward(loss)
        self._loss = loss
        self._pairs = [(p, g) for p, g in pairs if g is not None]
        self.param_grads = {p.name: g.name for p, g in self._pairs}
        return dict(self.param_grads)

    def optimize(self, opt: optim.Optimizer) -> None:
        """Append `opt`'s update op for every parameter that backward() found a gradient for."""
        if self._loss is None:
            raise ProgramError("call model.backward(loss) before choosing an optimizer")
        if self._optimized:
            raise ProgramError("the model already has an optimizer")
        with self._guard():
            opt.apply_gradients(self._pairs, self.network, self.init_network)
        self._optimized = True

    def sgd(self, learning_rate: float) -> None:
        self.optimize(optim.SGD(learning_rate))

    def momentum(self, learning_rate: float, momentum: float = 0.9, **kw) -> None:
        self.optimize(optim.Momentum(learning_rate, momentum, **kw))

    def adam(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
             epsilon: float = 1e-8) -> None:
        self.optimize(optim.Adam(learning_rate, beta1, beta2, epsilon))

    # -- running -------------------------------------------------------------------------------------
    def initialize_parameters(self) -> None:
        """Run the init network: every parameter and accumulator gets its first value in the scope."""
        self.executor.run(self.init_network, scope=self.scope, fetch_list=[])

    def fill(self, name: str, data) -> None:
        """Give input `name` a value for the next run (checked against its declaration then)."""
        self.var(name)
        self._feeds[name] = data

    def run(self, fetch=None, training: bool | None = None) -> list:
        """Run the network once in the model's scope with the filled inputs; return the fetched values
        (NumPy). training defaults to whether an optimizer was added. A training run runs every op
        (forward, gradients, updates; dropout drops); training=False runs only the forward ops built
        before backward() (evaluation: no update, dropout scales)."""
        fetch = [] if fetch is None else ([fetch] if isinstance(fetch, (str, Variable)) else list(fetch))
        training = self._optimized if training is None else training
        end = None if training else self._forward_end
        return self.executor.run(self.network, feed=dict(self._feeds), fetch_list=fetch, scope=self.scope,
                                 training=training, end=end)

    def fit(self, batches: Iterable[Mapping], fetch=None, *, record=None) -> FitResult:
        """Train one step per feed dict of `batches` ({input name: value}, filled as `fill` does) and return a
        FitResult with each step's fetched values. `record`: None or False for a plain loop; True for the flight
        recorder over every step (kc.record's defaults: a NaN/Inf watch on every output that stops the loop at
        the end of the step after its first hit; record={"background": False} stops it right there); a dict of kc.record's keywords (keep_last, nan, stop, background); or a Recorder made by
        kc.record(model.network, model.scope, ...), e.g. one given watches first. A recorded fit's recorder is
        `model.recorder` from the fit's start (the Training health panel finds it there while the loop runs)."""
        if not self._optimized:
            raise ProgramError("fit trains the model: choose an optimizer first (model.sgd(...), model.adam(...))")
        fetch = [] if fetch is None else ([fetch] if isinstance(fetch, (str, Variable)) else list(fetch))
        recorder = self._fit_recorder(record)
        if recorder is not None:
            self.recorder = recorder  # nameable (`model.recorder`) while the loop runs: the health panel finds it
        result = FitResult(recorder=recorder)
        with recorder if recorder is not None else nullcontext():
            for step, batch in enumerate(batches):
                if not isinstance(batch, Mapping):
                    raise FeedError(f"fit: batch {step} is a {type(batch).__name__}; each batch is a dict "
                                    "{input name: value}")
                for name, value in batch.items():
                    self.fill(name, value)
                result.fetched.append(self.run(fetch, training=True))
        return result

    def _fit_recorder(self, record) -> Recorder | None:
        """The Recorder `fit`'s `record` argument asks for (see fit)."""
        if record is None or record is False:
            return None
        if record is True:
            record = {}
        if isinstance(record, Mapping):
            unknown = sorted(set(record) - _RECORD_KEYWORDS)
            if unknown:
                raise KernelcoreError(f"fit: record= has keywords kc.record does not take: {unknown}; it takes "
                                      f"{sorted(_RECORD_KEYWORDS)}")
            return Recorder(self.network, self.scope, executor=self.executor, **record)
        if isinstance(record, Recorder):
            if record.program is not self.network or record.scope is not self.scope:
                raise KernelcoreError("fit: the recorder records another program or scope; make it with "
                                      "kc.record(model.network, model.scope, ...)")
            return record
        raise KernelcoreError(f"fit: record= takes True, a dict of kc.record's keywords or a Recorder, got "
                              f"{type(record).__name__}")

    # -- parameters on disk ----------------------------------------------------------------------------
    def save_parameters(self, path) -> None:
        """Write every parameter (not the optimizer's accumulators) to `path` as Paddle's combined
        .pdiparams stream, in sorted name order."""
        arrays = {}
        for n in self.all_params:
            v = self.scope.find_var(n)
            if v is None or v.value is None:
                raise ProgramError(f"parameter {n!r} has no value: run model.initialize_parameters() first")
            arrays[n] = np.asarray(to_host(v.value))
        paddle_files.save_params(Path(path), arrays)

    def load_parameters(self, path) -> None:
        """Read the parameters save_parameters wrote into the model's scope."""
        values = paddle_files.load_params(Path(path), self.all_params)
        for n, a in values.items():
            want = list(self.var(n).shape or ())
            if list(a.shape) != want:
                raise LoadError(f"{path}: parameter {n!r} has shape {list(a.shape)} in the file but the "
                                f"network declares {want}")
        place = self.executor.place
        for n, a in values.items():
            self.scope.var(n).value = place.xp.asarray(a) if place.kind == "gpu" else a
