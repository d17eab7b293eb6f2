"""Reading Paddle 3's PIR programs (the `.json` that `paddle.jit.save` and `save_inference_model` write by
default) into kernelcore's Program.

The file, as Paddle's serializer writes it (paddle/fluid/pir/serialize_deserialize):

    {"base_code": {"magic": "pir", "version": N, "trainable": bool},
     "program": {"regions": [{"#": "region_0", "blocks": [{"#": "block_0", "args": [...], "ops": [...]}]}]}}

an op  {"#": "<dialect>.<name>", "I": [{"%": id}, ...], "O": [{"%": id, "TT": type}, ...],
        "A": [{"N": name, "AT": attr}, ...], "OA": [...], "regions": [...]}
with dialect 0 = builtin, 1 = pd_op, 2 = cf; a parameter is {"#": "p", "A": [dist, is_param, need_clip, name],
"O": {"%": id, "TT": type}}; value id 0 is an absent optional operand; older files key ids with "#".

What comes out is the legacy form the rest of kernelcore knows (DESIGN.md: nothing downstream knows which format
a program came from): one block, parameters as persistable variables under Paddle's names, `pd_op.data` and
`pd_op.fetch` as feed and fetch ops, each value a variable named after its producer (`conv2d_12.out`), and
constants that PIR passes as operands (`full_int_array` shapes, pool sizes) folded back into attributes.

A file that is not what it says raises LoadError naming the op (its index in the block) and the field; the size
is checked before the file is read, JSON nesting is bounded, and every id is checked before use.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KernelcoreError, LoadError
from ..ir.program import Program
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import get_op_def, has_op
from .pir_ops import CONSTANT_MAKERS, DROP, PIR_OPS, PirOp

# A large model's PIR program is tens of MB; parsing JSON takes about ten times its size in memory, so a
# bigger file is refused before it is read.
MAX_PIR_BYTES = 256 << 20
DIALECTS = {"0": "builtin", "1": "pd_op", "2": "cf"}

# element types of PIR's dense tensors ("0.t_f32") -> kernelcore dtype names
_DTYPES = {"t_f16": "float16", "t_bf16": "bfloat16", "t_f32": "float32", "t_f64": "float64", "t_i8": "int8",
           "t_ui8": "uint8", "t_i16": "int16", "t_i32": "int32", "t_i64": "int64", "t_bool": "bool",
           "t_c64": "complex64", "t_c128": "complex128"}


class _Dtype(str):
    """A PIR dtype attribute's value ("float32"): legacy ops take it as a VarType number."""


def is_pir_json(head: bytes) -> bool:
    """Whether the first bytes of a file look like a PIR program (a JSON object naming magic "pir")."""
    text = head.lstrip()[:4096]
    return text[:1] == b"{" and b'"magic"' in text and b'"pir"' in text


def load_pir_program(path) -> Program:
    """Read a PIR `.json` program file into a Program (see the module docstring)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise LoadError(f"{path}: cannot read the program: {e.strerror or e}") from None
    if size > MAX_PIR_BYTES:
        raise LoadError(f"{path}: {size:,} bytes is more than a PIR program file holds "
                        f"(kernelcore reads up to {MAX_PIR_BYTES:,})")
    return pir_program_from_bytes(path.read_bytes(), source=str(path))


def pir_program_from_bytes(data: bytes, *, source: str = "bytes") -> Program:
    if len(data) > MAX_PIR_BYTES:
        raise LoadError(f"{source}: {len(data):,} bytes is more than a PIR program holds "
                        f"(kernelcore reads up to {MAX_PIR_BYTES:,})")
    doc = _parse_json(data, source)
    try:
        return _Reader(source).read(doc)
    except RecursionError:
        raise LoadError(f"{source}: attributes nested too deep to be a PIR program") from None


# -- JSON, bounded ---------------------------------------------------------------------------------------------
def _no_repeated_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k[:40]!r} appears twice in one object")
        out[k] = v
    return out


def _parse_json(data: bytes, source: str):
    # json's C scanner raises RecursionError past the interpreter's depth limit, so nesting is bounded there
    try:
        return json.loads(data, object_pairs_hook=_no_repeated_keys)
    except (ValueError, RecursionError) as e:
        why = "nested too deep" if isinstance(e, RecursionError) else str(e)[:200]
        raise LoadError(f"{source}: not a PIR program: invalid JSON: {why}") from None


# -- the reader --------------------------------------------------------------------------------------------------
@dataclass
class _Value:
    name: str | list[str]            # a variable, or a list of them (builtin.combine's vectors)
    shape: list[int] | None = None
    dtype: str | None = None
    const: object = None             # the value of a constant maker (full / full_int_array), else None
    maker: int | None = None         # index of the emitted op that writes it, or None
    parts: list = field(default_factory=list)  # a combine's element values
    unused: bool = False             # a result kernelcore's op does not give (a batch norm's reserve space)
    pending: tuple | None = None     # a vector result: (emitted op index, its slot, name stem) for builtin.split


@dataclass
class _Emit:
    type: str
    inputs: dict
    outputs: dict
    attrs: dict
    pir_index: int
    keep: bool = True
    block: int = 0


@dataclass(frozen=True)
class _BlockRef:
    """A `sub_block` attribute before the Program's blocks exist."""
    idx: int


@dataclass
class _Reader:
    source: str
    values: dict = field(default_factory=dict)      # PIR value id -> _Value
    counts: dict = field(default_factory=dict)      # op base name -> how many so far (for names)
    names: set = field(default_factory=set)
    params: list = field(default_factory=list)      # (name, shape, dtype, persistable)
    feeds: list = field(default_factory=list)       # (col, name, shape, dtype)
    fetches: list = field(default_factory=list)     # (col, name)
    emitted: list = field(default_factory=list)
    extra_types: dict = field(default_factory=dict)  # name -> (shape, dtype) of variables no PIR value names
    parents: list = field(default_factory=lambda: [-1])  # legacy block index -> its parent's
    cur: int = 0                                    # the legacy block ops are read into now
    declared: list = field(default_factory=list)    # (block, name, shape, dtype): outer variables of control flow
    path: str = ""                                  # where the ops read now sit ("op #4 (pd_op.while) body > ")
    where: str = ""

    def fail(self, what: str):
        raise LoadError(f"{self.source}: {self.where}{': ' if self.where else ''}{what}")

    # -- top level ------------------------------------------------------------------------------------------
    def read(self, doc) -> Program:
        if not isinstance(doc, dict) or not isinstance(doc.get("base_code"), dict):
            self.fail("not a PIR program (no base_code object)")
        base = doc["base_code"]
        if base.get("magic") != "pir":
            self.fail(f"not a PIR program (magic {str(base.get('magic'))[:20]!r}, expected 'pir')")
        regions = _get(doc, "program", dict, self) .get("regions")
        if not isinstance(regions, list) or len(regions) != 1:
            self.fail("the program must hold exactly one top-level region")
        blocks = _get(regions[0], "blocks", list, self)
        if len(blocks) != 1:
            self.fail(f"the top-level region must hold one block, it holds {len(blocks)}")
        for i, op in enumerate(_get(blocks[0], "ops", list, self)):
            self.where = f"op #{i}"
            self.op(i, op)
        self.where = ""
        return self.build()

    def emit(self, e: _Emit) -> None:
        e.block = self.cur
        self.emitted.append(e)

    def op(self, i: int, op) -> None:
        if not isinstance(op, dict):
            self.fail(f"expected an op object, got {type(op).__name__}")
        kind = op.get("#")
        if not isinstance(kind, str):
            self.fail("an op without a name ('#')")
        if kind == "p":
            return self.parameter(op)
        name = _op_name(kind)
        self.where = f"{self.path}op #{i} ({name[:60]})"
        if name == "pd_op.if":
            return self.if_op(op, i)
        if name == "pd_op.while":
            return self.while_op(op, i)
        if op.get("regions"):
            self.fail(f"{name} holds nested regions kernelcore does not know how to run")
        if name == "cf.yield":
            self.fail("cf.yield outside the end of an if or while region")
        if name in ("builtin.parameter", "pd_op.parameter"):
            return self.parameter(op)
        if name == "pd_op.data":
            return self.data(op)
        if name == "pd_op.fetch":
            return self.fetch(op)
        if name == "builtin.combine":
            parts = [self.value(i_) for i_ in self.operands(op)]
            if any(isinstance(v.name, list) for v in parts):
                self.fail("a combine of lists")
            return self.define(op, 0, _Value(name=[v.name for v in parts], const=_combined_const(parts),
                                             parts=parts))
        if name == "builtin.split":
            return self.split(op)
        if name in ("builtin.shadow_output", "pd_op.shadow_output"):
            return None  # names a value for Paddle's executor; kernelcore names values by their producer
        if name in CONSTANT_MAKERS:
            return self.constant(name, op, i)
        spec = PIR_OPS.get(name)
        if spec is None:
            self.fail(f"kernelcore has no counterpart for PIR op {name!r} yet")
        self.mapped(name, spec, op, i)

    # -- operands and results ------------------------------------------------------------------------------------
    def operands(self, op) -> list:
        ins = op.get("I", [])
        if not isinstance(ins, list):
            self.fail("'I' (operands) must be a list")
        return [_value_id(v, self) for v in ins]

    def results(self, op) -> list:
        outs = op.get("O", [])
        if isinstance(outs, dict):
            outs = [outs]
        if not isinstance(outs, list):
            self.fail("'O' (results) must be a list")
        out = []
        for r in outs:
            if not isinstance(r, dict):
                self.fail("a result must be an object")
            out.append((_value_id(r, self), _tensor_type(r.get("TT"), self)))
        return out

    def value(self, vid: int) -> _Value:
        v = self.values.get(vid)
        if v is None:
            self.fail(f"uses value %{vid} before any op defines it")
        if v.unused:
            self.fail(f"uses value %{vid} ({v.name}), a result kernelcore's op does not give")
        if v.pending is not None:
            self.fail(f"uses the list value %{vid} without a builtin.split")
        return v

    def define(self, op, k: int, value: _Value) -> None:
        res = self.results(op)
        if k >= len(res):
            self.fail(f"declares {len(res)} result(s); expected at least {k + 1}")
        vid, (shape, dtype, _is_list) = res[k]
        if vid in self.values or vid <= 0:
            self.fail(f"defines value %{vid} {'twice' if vid > 0 else '(ids of results are positive)'}")
        value.shape = value.shape if value.shape is not None else shape
        value.dtype = value.dtype or dtype
        self.values[vid] = value

    def stem(self, base: str) -> str:
        """`conv2d_12`: the next name stem for an op of this kind (its results are `conv2d_12.out`, ...)."""
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        return f"{base}_{k}"

    def fresh(self, stem: str, slot: str) -> str:
        name = f"{stem}.{slot}"
        while name in self.names:  # a parameter or feed may already hold it
            name += "_"
        self.names.add(name)
        return name

    # -- the kinds of ops ----------------------------------------------------------------------------------------
    def parameter(self, op) -> None:
        a = op.get("A")
        pname = a[3] if isinstance(a, list) and len(a) >= 4 else _attrs(op, self).get("parameter_name")
        if not isinstance(pname, str) or not pname:
            self.fail("a parameter without a name")
        if pname in self.names:
            self.fail(f"parameter {pname[:80]!r} declared twice")
        self.names.add(pname)
        self.define(op, 0, _Value(name=pname))
        v = self.values[_value_id(_first(op.get("O"), self), self)]
        flags = op.get("OA")  # [persistable, stop_gradient, trainable]: a dropout state is not saved
        persistable = not (isinstance(flags, list) and flags and flags[0] == 0)
        self.params.append((pname, v.shape, v.dtype, persistable))

    def data(self, op) -> None:
        attrs = _attrs(op, self)
        name = attrs.get("name")
        if not isinstance(name, str) or not name:
            self.fail("pd_op.data without a name")
        if name in self.names:
            self.fail(f"feed {name[:80]!r} declared twice")
        self.names.add(name)
        self.define(op, 0, _Value(name=name))
        v = self.values[self.results(op)[0][0]]
        self.feeds.append((len(self.feeds), name, v.shape, v.dtype))

    def split(self, op) -> None:
        ids = self.operands(op)
        if len(ids) != 1:
            self.fail("builtin.split takes one operand")
        v = self.values.get(ids[0])
        if v is None or v.pending is None and not isinstance(v.name, list):
            self.fail(f"builtin.split of %{ids[0]}, which is not a list value")
        res = self.results(op)
        if v.pending is not None:
            emit, slot, stem = v.pending
            names = [self.fresh(stem, f"{slot.lower()}{j}") for j in range(len(res))]
            self.emitted[emit].outputs[slot] = names
            v.pending, v.name = None, names
        if len(v.name) != len(res):
            self.fail(f"builtin.split into {len(res)} values of a list of {len(v.name)}")
        for k, n in enumerate(v.name):
            self.define(op, k, _Value(name=n))

    def fetch(self, op) -> None:
        ids = self.operands(op)
        if len(ids) != 1:
            self.fail(f"pd_op.fetch takes one operand, it has {len(ids)}")
        v = self.value(ids[0])
        if isinstance(v.name, list):
            self.fail("a fetch of a list of values")
        col = _attrs(op, self).get("col", len(self.fetches))
        self.mark_tensor(v)
        self.fetches.append((col if isinstance(col, int) else len(self.fetches), v.name))

    def constant(self, name: str, op, i: int) -> None:
        attrs = _attrs(op, self)
        res = self.results(op)
        shape, dtype, _ = res[0][1] if res else (None, None, False)
        dtype = _dtype_attr(attrs.get("dtype")) or dtype or "float32"
        if name == "pd_op.full_int_array":
            value = attrs.get("value", [])
            if not isinstance(value, list) or not all(isinstance(x, int) for x in value):
                self.fail("full_int_array's value must be a list of integers")
            dtype = dtype if dtype in ("int32", "int64") else "int64"
            fill = _Emit("assign_value", {}, {}, {"shape": [len(value)], "dtype": _var_type(dtype),
                                                  f"{dtype}_values": [int(x) for x in value]}, i, keep=False)
        else:
            value = attrs.get("value", 0.0)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                self.fail("full's value must be a number")
            shape = attrs.get("shape", [1])
            if not isinstance(shape, list) or len(shape) > 64 or not all(
                    isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
                self.fail(f"full's shape must be at most 64 integers >= 0, got {str(shape)[:60]}")
            fill = _Emit("fill_constant", {}, {}, {"shape": shape,
                                                   "value": float(value), "dtype": _var_type(dtype)}, i, keep=False)
        out = self.fresh(self.stem(name.split(".", 1)[1]), "out")
        fill.outputs["Out"] = [out]
        self.emit(fill)
        self.define(op, 0, _Value(name=out, dtype=dtype, shape=shape, const=value, maker=len(self.emitted) - 1))

    def mapped(self, name: str, spec: PirOp, op, i: int) -> None:
        if not has_op(spec.legacy):
            self.fail(f"{name} maps to kernelcore's {spec.legacy!r}, which this build does not have")
        ids = self.operands(op)
        if len(ids) != len(spec.inputs):
            self.fail(f"{len(ids)} operand(s); {name} takes {len(spec.inputs)} ({', '.join(spec.pir_inputs)})")
        inputs: dict[str, list[str]] = {}
        legacy_attrs = dict(spec.fixed)
        by_operand = {}
        for (pir_name, where), vid in zip(spec.inputs, ids):
            if vid == 0 or where == "~":
                continue  # an absent optional operand, or one the legacy op has no use for
            v = self.value(vid)
            by_operand[pir_name] = v
            if where is None:
                self.fail(f"operand {pir_name!r} is given, but kernelcore's {spec.legacy} does not take it")
            attr, tensor_slot, list_slot = _targets(where)
            if attr and v.const is not None:
                legacy_attrs[attr] = v.const
            elif isinstance(v.name, list):
                if list_slot is None and attr:
                    self.fail(f"operand {pir_name!r} is computed at run time; kernelcore's {spec.legacy} needs "
                              f"it constant (as attribute {attr!r})")
                slot = list_slot or tensor_slot
                inputs[slot] = list(v.name)
                self.mark_tensor(v)
            else:
                if tensor_slot is None:
                    self.fail(f"operand {pir_name!r} is computed at run time; kernelcore's {spec.legacy} needs "
                              f"it constant (as attribute {attr!r})")
                inputs[tensor_slot] = [v.name]
                self.mark_tensor(v)
        pir_attrs = _attrs(op, self)
        if spec.operands_take_dtype:
            self.retype_constants(name, by_operand.values(), _dtype_attr(pir_attrs.get("dtype")))
        scope = pir_attrs.get("struct_name")
        if isinstance(scope, str) and scope:
            # the Layer path dy2static records (/Sequential_6/InvertedResidual_1/Conv2D/) is what Paddle's legacy
            # programs call op_namescope: the graph groups ops into layers by it
            legacy_attrs["op_namescope"] = scope
        for attr_name, value in pir_attrs.items():
            legacy = spec.attrs.get(attr_name)
            if legacy is None:
                if attr_name in ("struct_name", "place", "stop_gradient", "persistable"):
                    continue
                self.fail(f"attribute {attr_name[:60]!r} is not one kernelcore knows for {name}")
            if legacy != DROP:
                legacy_attrs[legacy] = _legacy_attr_value(value)
        if spec.input_dtype_attr:
            first = by_operand.get(spec.pir_inputs[0])
            if first is None or first.dtype not in _VT_NAMES:
                self.fail(f"{name}'s operand has no known dtype")
            legacy_attrs[spec.input_dtype_attr] = _var_type(first.dtype)
        if spec.adjust is not None:
            spec.adjust(legacy_attrs)
        opdef = get_op_def(spec.legacy)
        try:
            legacy_attrs = {k: _coerce(opdef, k, v) for k, v in legacy_attrs.items()}
        except ValueError as e:
            self.fail(f"an attribute of kernelcore's {spec.legacy}: {e}")
        stem = self.stem(name.split(".", 1)[1].rstrip("_"))
        outputs: dict[str, list[str]] = {}
        res = self.results(op)
        if len(res) != len(spec.outputs):
            self.fail(f"{len(res)} result(s); {name} gives {len(spec.outputs)}")
        for k, ((pir_out, slot), (_vid, (_shape, _dtype, is_list))) in enumerate(zip(spec.outputs, res)):
            if slot is None:
                self.define(op, k, _Value(name=f"{stem}.{pir_out}", unused=True))
                continue
            slot, _, alias = slot.partition("=")
            if is_list:  # names come with the builtin.split that takes the list apart
                outputs[slot] = []
                self.define(op, k, _Value(name=[], pending=(len(self.emitted), slot, stem)))
                continue
            if alias:
                src = by_operand.get(alias)
                if src is None or isinstance(src.name, list):
                    self.fail(f"result {pir_out!r} aliases operand {alias!r}, which is absent")
                out_name = src.name
            else:
                out_name = self.fresh(stem, pir_out)
            self.define(op, k, _Value(name=out_name))
            outputs[slot] = [out_name]
        if spec.cast_result is not None:
            self.emit_with_cast(spec, inputs, outputs, legacy_attrs, i)
        else:
            self.emit(_Emit(spec.legacy, inputs, outputs, legacy_attrs, i))

    def emit_with_cast(self, spec: PirOp, inputs: dict, outputs: dict, attrs: dict, i: int) -> None:
        """The legacy op writes `<result>.raw` in its own dtype; a cast gives the result Paddle declares."""
        (slot, (final,)), = outputs.items()
        raw = self.fresh(final, "raw")
        self.emit(_Emit(spec.legacy, inputs, {slot: [raw]}, attrs, i))
        src, dst = spec.cast_result
        self.extra_types[raw] = (None, src)
        self.emit(_Emit("cast", {"X": [raw]}, {"Out": [final]},
                                  {"in_dtype": _var_type(src), "out_dtype": _var_type(dst)}, i))

    # -- control flow: regions become sub-blocks, one kid scope per branch taken or iteration --------------------
    def region_ops(self, op, k: int, n_args: int) -> tuple[list, list]:
        """(its ops but the closing cf.yield, the yield's operand ids) of region `k` of `op`, whose one block must
        take `n_args` arguments; the arguments are returned as the ops' first element's ... see while_op."""
        regions = op.get("regions")
        if not isinstance(regions, list) or k >= len(regions):
            self.fail(f"expected region #{k}")
        blocks = _get(regions[k], "blocks", list, self)
        if len(blocks) != 1 or not isinstance(blocks[0], dict):
            self.fail(f"region #{k} must hold one block object")
        args = blocks[0].get("args", [])
        if not isinstance(args, list) or len(args) != n_args:
            self.fail(f"region #{k}'s block must take {n_args} argument(s)")
        ops = _get(blocks[0], "ops", list, self)
        if not ops or not isinstance(ops[-1], dict) or _op_name(str(ops[-1].get("#"))) != "cf.yield":
            self.fail(f"region #{k} must end with cf.yield")
        return args, ops

    def sub_block(self, ops: list, where: str) -> tuple[int, list]:
        """Read `ops` (ending in cf.yield) into a new legacy block under the current one: (its index, the values
        the yield gives)."""
        idx = len(self.parents)
        self.parents.append(self.cur)
        (outer, self.cur), (path, self.path) = (self.cur, idx), (self.path, f"{where} > ")
        try:
            for j, op in enumerate(ops[:-1]):
                self.where = f"{self.path}op #{j}"
                self.op(j, op)
            self.where = f"{self.path}cf.yield"
            yields = [self.value(v) for v in self.operands(ops[-1])]
        finally:
            self.cur, self.path = outer, path
        return idx, yields

    def declare(self, name: str, shape, dtype) -> None:
        self.declared.append((self.cur, name, shape, dtype))

    def if_op(self, op, i: int) -> None:
        """pd_op.if -> conditional_block per branch (the false one under logical_not) writing outer variables,
        then select_input per result, as Paddle's legacy cond lowers."""
        where = self.where
        ids = self.operands(op)
        if len(ids) != 1:
            self.fail("pd_op.if takes one operand, its condition")
        cond = self.value(ids[0])
        res = self.results(op)
        stem = self.stem("if")
        not_cond = self.fresh(stem, "not_cond")
        self.extra_types[not_cond] = (cond.shape, "bool")
        self.emit(_Emit("logical_not", {"X": [cond.name]}, {"Out": [not_cond]}, {}, i))
        outs = {}
        for k, branch in ((0, "true"), (1, "false")):
            _args, ops = self.region_ops(op, k, 0)
            names = [self.fresh(stem, f"{branch}{r}") for r in range(len(res))]
            for n, (_vid, (shape, dtype, _l)) in zip(names, res):
                self.declare(n, shape, dtype)
            idx, yields = self.sub_block(ops, f"{where} {branch} branch")
            if len(yields) != len(res):
                self.fail(f"the {branch} branch yields {len(yields)} value(s) for {len(res)} result(s)")
            for n, y in zip(names, yields):
                self.copy_into(y, n, idx, i)
            scope = self.fresh(stem, f"{branch}_scope")
            self.extra_types[scope] = ("scopes", None)
            self.emit(_Emit("conditional_block", {"Cond": [cond.name if k == 0 else not_cond], "Input": []},
                            {"Out": names, "Scope": [scope]},
                            {"sub_block": _BlockRef(idx), "is_scalar_condition": True}, i))
            outs[branch] = names
            self.where = where
        mask = self.fresh(stem, "mask")
        self.extra_types[mask] = (cond.shape, "int32")
        self.emit(_Emit("cast", {"X": [cond.name]}, {"Out": [mask]},
                        {"in_dtype": _var_type("bool"), "out_dtype": _var_type("int32")}, i))
        for r in range(len(res)):
            out = self.fresh(stem, f"out{r}")
            self.define(op, r, _Value(name=out))
            self.emit(_Emit("select_input", {"X": [outs["false"][r], outs["true"][r]], "Mask": [mask]},
                            {"Out": [out]}, {}, i))

    def while_op(self, op, i: int) -> None:
        """pd_op.while -> a legacy while over loop variables: the carried operands are copied in, the body's
        block arguments are those variables, and its yield copies the next condition and values back."""
        where = self.where
        ids = self.operands(op)
        if not ids:
            self.fail("pd_op.while takes its condition and the carried values")
        cond, carried = self.value(ids[0]), [self.value(v) for v in ids[1:]]
        res = self.results(op)
        if len(res) != len(carried):
            self.fail(f"{len(res)} result(s) for {len(carried)} carried value(s)")
        args, ops = self.region_ops(op, 0, len(carried))
        stem = self.stem("while")
        cond_var = self.fresh(stem, "cond")
        self.declare(cond_var, cond.shape, cond.dtype)
        self.copy_into(cond, cond_var, self.cur, i)
        loop = []
        for k, v in enumerate(carried):
            name = self.fresh(stem, f"carry{k}")
            self.declare(name, v.shape, v.dtype)
            self.copy_into(v, name, self.cur, i)
            loop.append(name)
        for k, a in enumerate(args):  # the body sees the loop variables under the block arguments' ids
            aid = _value_id(a, self)
            if aid in self.values:
                self.fail(f"block argument %{aid} defined twice")
            shape, dtype, _l = _tensor_type(a.get("TT"), self)
            self.values[aid] = _Value(name=loop[k], shape=shape, dtype=dtype)
        idx, yields = self.sub_block(ops, f"{where} body")
        if len(yields) != 1 + len(carried):
            self.fail(f"the body yields {len(yields)} value(s); expected the condition and {len(carried)}")
        # values a later copy would overwrite before it is read (a swap) go through a temporary first
        staged = []
        for k, y in enumerate(yields[1:]):
            if isinstance(y.name, str) and y.name in loop and loop.index(y.name) != k:
                tmp = self.fresh(stem, f"next{k}")
                self.copy_into(y, tmp, idx, i)
                staged.append((_Value(name=tmp, shape=y.shape, dtype=y.dtype), loop[k]))
            else:
                staged.append((y, loop[k]))
        for y, name in staged:
            self.copy_into(y, name, idx, i)
        self.copy_into(yields[0], cond_var, idx, i)
        scopes = self.fresh(stem, "scopes")
        self.extra_types[scopes] = ("scopes", None)
        self.emit(_Emit("while", {"X": list(loop), "Condition": [cond_var]}, {"Out": list(loop),
                        "StepScopes": [scopes]}, {"sub_block": _BlockRef(idx), "is_test": True}, i))
        for k, name in enumerate(loop):
            self.define(op, k, _Value(name=name))
        self.where = where

    def copy_into(self, v: _Value, name: str, block: int, i: int) -> None:
        if isinstance(v.name, list):
            self.fail("control flow over a list of values")
        if v.name == name:
            return
        self.mark_tensor(v)
        outer, self.cur = self.cur, block
        try:
            self.emit(_Emit("assign", {"X": [v.name]}, {"Out": [name]}, {}, i))
        finally:
            self.cur = outer

    def retype_constants(self, name: str, operands, dtype: str | None) -> None:
        """Make the constants `operands` come from in `dtype` (an op whose dtype attribute its legacy twin reads
        from its operands)."""
        if dtype is None:
            return
        for v in operands:
            maker = self.emitted[v.maker] if v.maker is not None else None
            if maker is None or maker.type != "fill_constant":
                self.fail(f"{name}'s operands must be constants (pd_op.full) here")
            maker.attrs["dtype"] = _var_type(dtype)
            v.dtype = dtype

    def mark_tensor(self, v: _Value) -> None:
        """`v` is read as a tensor: the constant op that makes it (if any) must run."""
        for part in v.parts or [v]:
            if part.maker is not None:
                self.emitted[part.maker].keep = True

    # -- the Program -------------------------------------------------------------------------------------------
    def build(self) -> Program:
        try:
            return self.assemble()
        except LoadError:
            raise
        except KernelcoreError as e:  # the ops and variables gathered do not make a program kernelcore accepts
            raise LoadError(f"{self.source}: {e}") from None

    def assemble(self) -> Program:
        prog = Program()
        blocks = [prog.global_block()]
        for parent in self.parents[1:]:
            blocks.append(prog.create_block(parent))
        prog._current = 0
        block = blocks[0]
        declared = set()
        for name, shape, dtype, persistable in self.params:
            block.create_var(name, shape=shape, dtype=dtype or "float32", persistable=persistable,
                             is_parameter=persistable)
            declared.add(name)
        for _col, name, shape, dtype in self.feeds:
            block.create_var(name, shape=shape, dtype=dtype or "float32")
            declared.add(name)
        for b, name, shape, dtype in self.declared:
            _create(blocks[b], name, shape, dtype)
            declared.add(name)
        shapes = dict(self.extra_types)
        for v in self.values.values():
            if isinstance(v.name, str):
                shapes.setdefault(v.name, (v.shape, v.dtype))
        feeds = [name for _c, name, _s, _d in sorted(self.feeds, key=lambda t: t[0])]
        fetches = [name for _col, name in sorted(self.fetches, key=lambda t: t[0])]
        if feeds:  # feed and fetch ops as Paddle's legacy inference programs hold them
            block.create_var("feed", type=pb.VarType.FEED_MINIBATCH, persistable=True, dtype=None)
        if fetches:
            block.create_var("fetch", type=pb.VarType.FETCH_LIST, persistable=True, dtype=None)
        for col, name in enumerate(feeds):
            block.append_op("feed", inputs={"X": ["feed"]}, outputs={"Out": [name]}, attrs={"col": col}, infer=False)
        kept = [e for e in self.emitted if e.keep]
        reads = self.outer_reads(kept)
        for e in kept:
            for names in e.outputs.values():
                for n in names:
                    if n not in declared:
                        _create(blocks[e.block], n, *shapes.get(n, (None, None)))
                        declared.add(n)
            attrs = dict(e.attrs)
            sub = attrs.get("sub_block")
            inputs = dict(e.inputs)
            if isinstance(sub, _BlockRef):
                attrs["sub_block"] = blocks[sub.idx]
                slot = "Input" if e.type == "conditional_block" else "X"
                inputs[slot] = list(dict.fromkeys(list(inputs.get(slot, [])) + reads[sub.idx]))
            try:
                blocks[e.block].append_op(e.type, inputs=inputs, outputs=e.outputs, attrs=attrs, infer=False)
            except Exception as err:  # a table row that does not fit kernelcore's op spec: name the PIR op
                raise LoadError(f"{self.source}: op #{e.pir_index}: as kernelcore's {e.type}: {err}") from None
        for col, name in enumerate(fetches):
            block.append_op("fetch", inputs={"X": [name]}, outputs={"Out": ["fetch"]}, attrs={"col": col},
                            infer=False)
        return prog

    def outer_reads(self, ops: list[_Emit]) -> dict[int, list[str]]:
        """For each sub-block: the variables its ops (and its sub-blocks' ops) read that it does not write; the
        control-flow op that runs it lists them as inputs, as Paddle's legacy programs do."""
        writes: dict[int, set] = {}
        reads: dict[int, list] = {}
        for e in ops:
            chain, b = [], e.block
            while b > 0:
                chain.append(b)
                b = self.parents[b]
            for b in chain:
                w = writes.setdefault(b, set())
                r = reads.setdefault(b, [])
                for names in e.inputs.values():
                    r.extend(n for n in names if n not in w)
                for names in e.outputs.values():
                    w.update(names)
        return {b: [n for n in dict.fromkeys(reads.get(b, [])) if n not in writes.get(b, set())]
                for b in range(1, len(self.parents))}


def _create(block, name: str, shape, dtype) -> None:
    if shape == "scopes":
        block.create_var(name, type=pb.VarType.STEP_SCOPES, dtype=None)
    else:
        block.create_var(name, shape=shape, dtype=dtype or "float32")


# -- small parsers ----------------------------------------------------------------------------------------------
_VT_NAMES = {"float16": "FP16", "bfloat16": "BF16", "float32": "FP32", "float64": "FP64", "int8": "INT8",
             "uint8": "UINT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "bool": "BOOL",
             "complex64": "COMPLEX64", "complex128": "COMPLEX128"}


def _get(obj, key: str, kind, reader: _Reader):
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, kind):
        reader.fail(f"expected {key!r} to be a {kind.__name__}")
    return v


def _first(x, reader):
    if isinstance(x, list):
        if not x:
            reader.fail("an op without results")
        return x[0]
    return x


def _op_name(kind: str) -> str:
    dialect, dot, rest = kind.partition(".")
    if dot and dialect in DIALECTS:
        return f"{DIALECTS[dialect]}.{rest}"
    return kind


def _value_id(v, reader: _Reader) -> int:
    if not isinstance(v, dict):
        reader.fail(f"expected a value reference object, got {type(v).__name__}")
    vid = v.get("%", v.get("#"))
    if not isinstance(vid, int) or isinstance(vid, bool) or abs(vid) > 1 << 40:
        reader.fail(f"a value id must be an integer, got {str(vid)[:40]!r}")
    return vid


def _tensor_type(tt, reader: _Reader):
    """(shape, dtype name, is a list) of a result's type; shape and dtype None where kernelcore does not model
    the type."""
    if not isinstance(tt, dict):
        return None, None, False
    kind = str(tt.get("#", ""))
    if kind.endswith("t_vec"):
        return None, None, True
    if not kind.endswith("t_dtensor"):
        return None, None, False
    d = tt.get("D")
    if not isinstance(d, list) or len(d) < 2 or not isinstance(d[0], dict):
        reader.fail("a dense tensor type must be [element type, dims, ...]")
    elem = str(d[0].get("#", "")).partition(".")[2]
    dims = d[1]
    if not isinstance(dims, list) or len(dims) > 64 or not all(
            isinstance(x, int) and not isinstance(x, bool) and -1 <= x < 1 << 40 for x in dims):
        reader.fail(f"a tensor's dims must be at most 64 integers >= -1, got {str(dims)[:60]}")
    return list(dims), _DTYPES.get(elem), False


def _attr_value(at, reader: _Reader):
    if not isinstance(at, dict):
        reader.fail("an attribute value must be an object")
    kind = str(at.get("#", "")).partition(".")[2]
    d = at.get("D")
    if kind == "a_array":
        if not isinstance(d, list):
            reader.fail("an array attribute must hold a list")
        return [_attr_value(x, reader) for x in d]
    if kind in ("a_bool",):
        if not isinstance(d, bool):
            reader.fail(f"a bool attribute holds {str(d)[:20]!r}")
        return d
    if kind in ("a_i32", "a_i64", "a_index"):
        if not isinstance(d, int) or isinstance(d, bool):
            reader.fail(f"an integer attribute holds {str(d)[:20]!r}")
        return d
    if kind in ("a_f32", "a_f64"):
        if not isinstance(d, (int, float)) or isinstance(d, bool):
            reader.fail(f"a float attribute holds {str(d)[:20]!r}")
        return float(d)
    if kind == "a_intarray":
        if not isinstance(d, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in d):
            reader.fail("an int array attribute must hold integers")
        return d
    if kind in ("a_str", "a_dtype"):
        if not isinstance(d, str):
            reader.fail(f"a string attribute holds {type(d).__name__}")
        return _Dtype(d) if kind == "a_dtype" else d
    if kind == "a_scalar":  # a typed scalar: [type, value] or the value
        return d[1] if isinstance(d, list) and len(d) == 2 else d
    return d  # place, data layout and others kernelcore does not read


def _attrs(op, reader: _Reader) -> dict:
    a = op.get("A", [])
    if not isinstance(a, list):
        reader.fail("'A' (attributes) must be a list")
    out = {}
    for item in a:
        if not isinstance(item, dict) or not isinstance(item.get("N"), str):
            reader.fail("an attribute must be {'N': name, 'AT': value}")
        out[item["N"]] = _attr_value(item.get("AT"), reader)
    return out


def _dtype_attr(name):
    return name if isinstance(name, str) and name in _VT_NAMES else None


def _var_type(dtype_name: str) -> int:
    return getattr(pb.VarType, _VT_NAMES.get(dtype_name, "FP32"))


def _legacy_attr_value(value):
    if isinstance(value, _Dtype):
        if value not in _VT_NAMES:
            return -1  # "Undefined(ALL_DTYPE)": keep the input's dtype, as legacy ops say with -1
        return _var_type(value)
    return value


_INT_TYPES = (pb.AttrType.INT, pb.AttrType.LONG)
_INTS_TYPES = (pb.AttrType.INTS, pb.AttrType.LONGS)
_FLOAT_TYPES = (pb.AttrType.FLOAT, pb.AttrType.FLOAT64)


def _number(x, kind):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"expected a number, got {str(x)[:40]!r}")
    if kind is int and x != int(x):
        raise ValueError(f"expected an integer, got {x!r}")
    return kind(x)


def _coerce(opdef, name: str, value):
    """A folded constant in the type the legacy attribute takes (a `full` gives floats; a pool size ints).
    ValueError when it cannot be that type."""
    spec = opdef.attr_spec(name)
    if spec is None:
        return value
    t = spec.type
    if t in _INT_TYPES and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(value, int)
    if t in _INTS_TYPES:
        items = value if isinstance(value, list) else [value]
        return [_number(x, int) for x in items]
    if t in _FLOAT_TYPES and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(value, float)
    if t == pb.AttrType.FLOATS:
        items = value if isinstance(value, list) else [value]
        return [_number(x, float) for x in items]
    return value


def _combined_const(values: list[_Value]):
    if values and all(v.const is not None and not isinstance(v.const, list) for v in values):
        return [v.const for v in values]
    return None


def _targets(where: str):
    """'@attr|Slot|ListSlot' -> (attr or None, tensor slot or None, list slot or None)."""
    parts = where.split("|")
    attr = parts[0][1:] if parts[0].startswith("@") else None
    rest = parts[1:] if attr else parts
    tensor_slot = rest[0] if rest else None
    list_slot = rest[1] if len(rest) > 1 else None
    return attr, tensor_slot, list_slot
