"""The op registry: one entry per op type.

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
from dataclasses import dataclass, field
from typing import Any, Callable

from . import attrs as attrlib
from ..errors import AttrError, OpValidationError, UnknownOpError
from .op_names import close_op_types, is_paddle_op
from .op_sources import source_hint
from .proto import framework_pb2 as pb
from ..text_safety import NAME_CHARS_SHOWN, quote_name

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
    kernels: dict = field(default_factory=dict)  # (place kind, dtype name|None) -> fn
    specializers: dict = field(default_factory=dict)  # place kind -> factory (see `specialize`)
    no_kernel_reason: str = ""  # why an op has no kernel at all (e.g. handled by the executor)
    # output slot -> the input slot it may be written over (Paddle's in-place pairs: ParamOut over Param), when
    # the program names one variable for both and nothing else holds the value (see ExecContext.donated)
    inplace: dict = field(default_factory=dict)
    # how its kernel uses the CPU's cores (kernelcore/runtime/cpu_parts.py): in parts of its own, or through the BLAS's
    # threads, which a run split into parts holds at one
    runs_in_parts: bool = False
    needs_blas_threads: bool = False

    # -- kernels ------------------------------------------------------------
    def kernel(self, places=("cpu", "gpu"), dtypes=(None,)):
        """Decorator: register `fn` for each (place, dtype). dtype None = any dtype."""
        def register(fn):
            for p in places:
                for d in dtypes:
                    self.kernels[(p, d)] = fn
            return fn
        return register

    def specialize(self, places=("cpu", "gpu")):
        """Decorator: register a kernel factory, called once when an op is prepared.

        `make(op, xp)` sees the prepared op (`op.attrs` parsed, `op.ins` its slots, `op.in_dtypes` and
        `op.in_shapes` the NumPy dtypes and shapes its inputs are declared with, None where unknown) and returns either a function
        `fn(*input_values) -> output_value` with everything the attributes decide already settled
        (scalars cast to the dtype, no-op branches gone), or None to leave the op to its plain kernel.
        It is only asked for ops whose present inputs are single variables and that write one
        variable; the plain kernel stays the reference the specialised form must agree with."""
        def register(make):
            for p in places:
                self.specializers[p] = make
            return make
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

    # -- the op spec applied: one owner ------------------------------------------------------------
    def bind(self, inputs: dict, outputs: dict, attrs: dict, where: str, *, attr_types: dict | None = None,
             ignore_unknown_attrs: bool = False) -> BoundOp:
        """Check an op's slots and attributes against this OpProto and parse them: the one place that
        does (appending an op, preparing it for a run and writing a gradient op all call it).

        inputs/outputs: slot -> list of variable names. attrs: name -> value. attr_types: the AttrType
        each value was written with (an OpDesc's), so Paddle's wider or narrower encodings (INT for LONG,
        FLOAT64 for FLOAT, ...) are accepted as the declared type. ignore_unknown_attrs: attributes this
        OpProto does not declare are skipped (a desc from a file may carry attributes of another Paddle
        version) instead of refused. Raises OpValidationError / AttrError naming `where`."""
        for kind, given, slots in (("input", inputs, self.inputs), ("output", outputs, self.outputs)):
            by_name = {sl.name: sl for sl in slots}
            for slot, names in given.items():
                spec = by_name.get(slot)
                if spec is None:
                    if not names:
                        continue  # Paddle writes empty optional slots of other versions
                    raise OpValidationError(f"{where}: unknown {kind} slot {slot!r}; {self.type!r} takes "
                                            f"{list(by_name)}")
                if len(names) > 1 and not spec.duplicable:
                    raise OpValidationError(f"{where}: {kind} {slot!r} takes one variable, got {len(names)}: "
                                            f"{list(names)}")
            for spec in slots:
                if not spec.dispensable and not given.get(spec.name):
                    raise OpValidationError(f"{where}: {kind} {spec.name!r} is required"
                                            f"{' (' + spec.comment + ')' if spec.comment else ''}")
        parsed, given_attrs = {}, {}
        for name, value in attrs.items():
            spec = self.attr_spec(name)
            if spec is None and ignore_unknown_attrs:
                continue
            if attr_types is not None and spec is not None:
                value = attrlib.coerce(spec.type, attr_types.get(name, spec.type), value)
            value = self.check_attr(name, value, where)
            given_attrs[name] = value
            if not spec.extra:
                parsed[name] = value
        for name, spec in self.attrs.items():
            if name in parsed or spec.extra:
                continue
            if spec.required:
                raise AttrError(f"{where}: attribute {name!r} ({attrlib.type_name(spec.type)}) is required"
                                f"{': ' + spec.comment if spec.comment else ''}")
            parsed[name] = spec.default
        ins = tuple((sl.name, tuple(inputs.get(sl.name, ())), sl.duplicable) for sl in self.inputs)
        outs = tuple((sl.name, tuple(outputs.get(sl.name, ())), sl.duplicable) for sl in self.outputs)
        return BoundOp(self, ins, outs, parsed, given_attrs)

    def bind_desc(self, desc: pb.OpDesc, where: str) -> BoundOp:
        """`bind` over an OpDesc as written (in a file, or by a program transform)."""
        values, types = {}, {}
        for a in desc.attrs:
            if self.attr_spec(a.name) is None:
                continue
            try:
                values[a.name] = attrlib.read(a)
            except TypeError as e:
                raise AttrError(f"{where}: {e}") from None
            types[a.name] = a.type
        return self.bind({v.parameter: tuple(v.arguments) for v in desc.inputs},
                         {v.parameter: tuple(v.arguments) for v in desc.outputs},
                         values, where, attr_types=types, ignore_unknown_attrs=True)


@dataclass(frozen=True)
class BoundOp:
    """An op's slots and attributes after `OpDef.bind`: slots in OpProto order as (slot, names,
    duplicable) with () for an absent dispensable slot; `attrs` every declared (non-extra) attribute,
    parsed, checked and defaulted; `given` what was explicitly given, extras included (for writing)."""
    opdef: OpDef
    ins: tuple
    outs: tuple
    attrs: dict
    given: dict


def feed_fetch_col(desc: pb.OpDesc) -> int:
    """The `col` of a feed or fetch op desc: which entry of the feed/fetch list it reads or writes."""
    return get_op_def(desc.type).bind_desc(desc, f"op {desc.type!r}").attrs["col"]


_REGISTRY: dict[str, OpDef] = {}


def register_op(type: str, comment: str, inputs=(), outputs=(), attrs=(), infer_shape=None,
                inplace=None) -> OpDef:
    if type in _REGISTRY:
        raise ValueError(f"op {type!r} is registered twice")
    d = OpDef(type, comment, tuple(inputs), tuple(outputs), {a.name: a for a in attrs}, infer_shape,
              inplace=dict(inplace or {}))
    for out_slot, in_slot in d.inplace.items():
        if out_slot not in {s.name for s in d.outputs} or in_slot not in {s.name for s in d.inputs}:
            raise ValueError(f"op {type!r}: in-place pair {out_slot} <- {in_slot} names a slot it does not have")
    _REGISTRY[type] = d
    return d


def get_op_def(type: str) -> OpDef:
    d = _REGISTRY.get(type)
    if d is None:
        raise UnknownOpError(f"unknown op type {quote_name(type, NAME_CHARS_SHOWN)}{unknown_op_hint(type)}")
    return d


def has_op(type: str) -> bool:
    return type in _REGISTRY


def all_op_defs() -> dict[str, OpDef]:
    return dict(sorted(_REGISTRY.items()))


def unknown_op_hint(op_type: str) -> str:
    """What to add after an unknown op type: that Paddle has it, or the close registered names."""
    source = source_hint(op_type)
    if is_paddle_op(op_type) or source:
        return f" (a PaddlePaddle op with no kernel in kernelcore{source})"
    close = close_op_types(op_type, _REGISTRY)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=3)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
