"""The op registry (seed 003): one entry per op type.

An entry holds the op's OpProto (inputs, outputs, attributes with comments,
defaults and checks), its shape/dtype inference, its gradient rule and its
kernels keyed by (place kind, dtype). Python op creators, validation on append
and the executor's kernel choice are all derived from these entries.

A kernel is a plain function `kernel(ctx, ins, attrs) -> outs`:
  ins   a tuple with one entry per input slot, in OpProto order: an array,
        a list of arrays (duplicable slot) or None (absent dispensable slot);
  attrs a dict of parsed attributes, defaults filled in;
  outs  a tuple with one entry per output slot, same conventions.
Kernels must not mutate their inputs: they return new values.
A kernel written as a generator (control-flow ops) runs sub-blocks with
`yield from ctx.run_block(...)` and returns its outs.
"""
from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from . import attrs as attrlib
from .errors import AttrError, UnknownOpError
from .op_names import close_op_types, is_paddle_op
from .proto import framework_pb2 as pb

A = pb.AttrType
NO_DEFAULT = object()


@dataclass(frozen=True)
class Slot:
    name: str
    comment: str = ""
    duplicable: bool = False
    dispensable: bool = False
    intermediate: bool = False


def In(name, comment="", **kw) -> Slot:  # noqa: N802 - reads like a table entry
    return Slot(name, comment, **kw)


Out = In


@dataclass(frozen=True)
class Check:
    text: str  # what the check demands, e.g. "> 0"
    ok: Callable[[Any], bool]


@dataclass(frozen=True)
class Attr:
    name: str
    type: int
    comment: str = ""
    default: Any = NO_DEFAULT
    checks: tuple = ()
    extra: bool = False  # Paddle's "extra" attributes: accepted, never required

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT and not self.extra


def larger_than(bound) -> Check:
    return Check(f"> {bound}", lambda v: v > bound)


def at_least(bound) -> Check:
    return Check(f">= {bound}", lambda v: v >= bound)


def one_of(*values) -> Check:
    return Check(f"one of {list(values)}", lambda v: v in values)


# Attributes Paddle writes on every op (roles, call stacks, device hints). Any op
# accepts them; none changes what a kernel computes.
COMMON_ATTRS = {a.name: a for a in (
    Attr("op_role", A.INT, "the role of the op (forward, backward, optimize, ...)", 0, extra=True),
    Attr("op_role_var", A.STRINGS, "parameter/gradient pairs an optimize op touches", [], extra=True),
    Attr("op_namescope", A.STRING, "the name scope the op was built in", "/", extra=True),
    Attr("op_callstack", A.STRINGS, "the Python stack that built the op", [], extra=True),
    Attr("op_device", A.STRING, "a device hint", "", extra=True),
    Attr("with_quant_attr", A.BOOLEAN, "whether quantization attributes are set", False, extra=True),
    Attr("use_mkldnn", A.BOOLEAN, "oneDNN hint (ignored)", False, extra=True),
    Attr("use_cudnn", A.BOOLEAN, "cuDNN hint (ignored)", False, extra=True),
    Attr("use_onednn", A.BOOLEAN, "oneDNN hint (ignored)", False, extra=True),
    Attr("mkldnn_data_type", A.STRING, "oneDNN hint (ignored)", "float32", extra=True),
    Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "float32", extra=True),
    Attr("is_test", A.BOOLEAN, "inference-only hint", False, extra=True),
    Attr("use_quantizer", A.BOOLEAN, "quantization hint (ignored)", False, extra=True),
    Attr("name", A.STRING, "a user-given name", "", extra=True),
)}


@dataclass
class OpDef:
    type: str
    comment: str
    inputs: tuple[Slot, ...]
    outputs: tuple[Slot, ...]
    attrs: dict[str, Attr]
    infer_shape: Callable | None = None
    grad: Any = None  # the gradient rule, set by the backward module
    kernels: dict = field(default_factory=dict)  # (place kind, dtype name|None) -> fn
    no_kernel_reason: str = ""  # why an op has no kernel at all (e.g. handled by the executor)

    # -- kernels ------------------------------------------------------------
    def kernel(self, places=("cpu", "gpu"), dtypes=(None,)):
        """Decorator: register `fn` for each (place, dtype). dtype None = any dtype."""
        def register(fn):
            for p in places:
                for d in dtypes:
                    self.kernels[(p, d)] = fn
            return fn
        return register

    def find_kernel(self, place_kind: str, dtype_name: str | None):
        k = self.kernels.get((place_kind, dtype_name))
        if k is None:
            k = self.kernels.get((place_kind, None))
        return k

    # -- the OpProto message ------------------------------------------------
    @property
    def proto(self) -> pb.OpProto:
        p = pb.OpProto(type=self.type, comment=self.comment)
        for slots, dst in ((self.inputs, p.inputs), (self.outputs, p.outputs)):
            for s in slots:
                dst.add(name=s.name, comment=s.comment, duplicable=s.duplicable,
                        dispensable=s.dispensable, intermediate=s.intermediate)
        for a in self.attrs.values():
            p.attrs.add(name=a.name, type=a.type, comment=a.comment, extra=a.extra)
        return p

    def attr_spec(self, name: str) -> Attr | None:
        return self.attrs.get(name) or COMMON_ATTRS.get(name)

    def input_slot(self, name: str) -> Slot | None:
        return next((s for s in self.inputs if s.name == name), None)

    def output_slot(self, name: str) -> Slot | None:
        return next((s for s in self.outputs if s.name == name), None)

    def check_attr(self, name: str, value, where: str) -> Any:
        """Validate one attribute; return its canonical value or raise AttrError."""
        spec = self.attr_spec(name)
        if spec is None:
            hint = _did_you_mean(name, list(self.attrs))
            raise AttrError(f"{where}: unknown attribute {name!r}{hint}; "
                            f"{self.type!r} takes {sorted(self.attrs) or 'no attributes'}")
        problem = attrlib.check_value(spec.type, value)
        if problem is not None:
            raise AttrError(f"{where}: attribute {name!r}: {problem}")
        value = attrlib.normalize(spec.type, value)
        for c in spec.checks:
            if not c.ok(value):
                raise AttrError(f"{where}: attribute {name!r} must be {c.text}, got {value!r}")
        return value

    @property
    def is_generator(self) -> bool:
        return any(inspect.isgeneratorfunction(k) for k in self.kernels.values())


_REGISTRY: dict[str, OpDef] = {}


def register_op(type: str, comment: str, inputs=(), outputs=(), attrs=(), infer_shape=None) -> OpDef:
    if type in _REGISTRY:
        raise ValueError(f"op {type!r} is registered twice")
    d = OpDef(type, comment, tuple(inputs), tuple(outputs), {a.name: a for a in attrs}, infer_shape)
    _REGISTRY[type] = d
    return d


def get_op_def(type: str) -> OpDef:
    d = _REGISTRY.get(type)
    if d is None:
        _load_ops()
        d = _REGISTRY.get(type)
    if d is None:
        raise UnknownOpError(f"unknown op type {type!r}{unknown_op_hint(type)}")
    return d


def has_op(type: str) -> bool:
    _load_ops()
    return type in _REGISTRY


def all_op_defs() -> dict[str, OpDef]:
    _load_ops()
    return dict(sorted(_REGISTRY.items()))


def _load_ops() -> None:
    from . import ops  # noqa: F401  - registering is importing


def unknown_op_hint(op_type: str) -> str:
    """What to add after an unknown op type: that Paddle has it, or the close registered names."""
    if is_paddle_op(op_type):
        return " (a PaddlePaddle op with no kernel in kernelcore)"
    close = close_op_types(op_type, _REGISTRY)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=3)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
