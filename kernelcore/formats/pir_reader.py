"""The PIR reader proper: walks a PIR program's ops in order, keeps each SSA value as a named variable, folds the
constants PIR passes as operands back into attributes, maps `pd_op.*` ops through the table in pir_ops, and
assembles the legacy Program (pir_json.py is the entry point; pir_control_flow.py lowers if/while).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import KernelcoreError, LoadError
from ..ir.program import Program
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import get_op_def, has_op
from .pir_control_flow import read_if, read_while
from .pir_ops import CONSTANT_MAKERS, DROP, PIR_OPS, PirOp
from .pir_values import (VT_NAMES, BlockRef, Emit, Value, attrs_of, coerce_attr, combined_const, create_var,
                         dtype_attr, first_result, get_field, legacy_attr_value, op_name, operand_targets,
                         tensor_type, value_id, var_type)


@dataclass
class Reader:
    source: str
    values: dict = field(default_factory=dict)      # PIR value id -> Value
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
        regions = get_field(doc, "program", dict, self) .get("regions")
        if not isinstance(regions, list) or len(regions) != 1:
            self.fail("the program must hold exactly one top-level region")
        blocks = get_field(regions[0], "blocks", list, self)
        if len(blocks) != 1:
            self.fail(f"the top-level region must hold one block, it holds {len(blocks)}")
        for i, op in enumerate(get_field(blocks[0], "ops", list, self)):
            self.where = f"op #{i}"
            self.op(i, op)
        self.where = ""
        return self.build()

    def emit(self, e: Emit) -> None:
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
        name = op_name(kind)
        self.where = f"{self.path}op #{i} ({name[:60]})"
        if name == "pd_op.if":
            return read_if(self, op, i)
        if name == "pd_op.while":
            return read_while(self, op, i)
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
            return self.define(op, 0, Value(name=[v.name for v in parts], const=combined_const(parts),
                                            parts=parts))
        if name == "builtin.split":
            return self.split(op)
        if name == "pd_op.create_array":
            return self.array(op)
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
        return [value_id(v, self) for v in ins]

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
            out.append((value_id(r, self), tensor_type(r.get("TT"), self)))
        return out

    def value(self, vid: int) -> Value:
        v = self.values.get(vid)
        if v is None:
            self.fail(f"uses value %{vid} before any op defines it")
        if v.unused:
            self.fail(f"uses value %{vid} ({v.name}), a result kernelcore's op does not give")
        if v.pending is not None:
            self.fail(f"uses the list value %{vid} without a builtin.split")
        return v

    def define(self, op, k: int, value: Value) -> None:
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
        pname = a[3] if isinstance(a, list) and len(a) >= 4 else attrs_of(op, self).get("parameter_name")
        if not isinstance(pname, str) or not pname:
            self.fail("a parameter without a name")
        if pname in self.names:
            self.fail(f"parameter {pname[:80]!r} declared twice")
        self.names.add(pname)
        self.define(op, 0, Value(name=pname))
        v = self.values[value_id(first_result(op.get("O"), self), self)]
        flags = op.get("OA")  # [persistable, stop_gradient, trainable]: a dropout state is not saved
        persistable = not (isinstance(flags, list) and flags and flags[0] == 0)
        self.params.append((pname, v.shape, v.dtype, persistable))

    def data(self, op) -> None:
        attrs = attrs_of(op, self)
        name = attrs.get("name")
        if not isinstance(name, str) or not name:
            self.fail("pd_op.data without a name")
        if name in self.names:
            self.fail(f"feed {name[:80]!r} declared twice")
        self.names.add(name)
        self.define(op, 0, Value(name=name))
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
            self.define(op, k, Value(name=n))

    def array(self, op) -> None:
        """A tensor array: a variable, as legacy programs declare one; array_write_ fills it in place."""
        name = self.fresh(self.stem("create_array"), "out")
        self.declared.append((self.cur, name, "array", dtype_attr(attrs_of(op, self).get("dtype"))))
        self.define(op, 0, Value(name=name))

    def fetch(self, op) -> None:
        ids = self.operands(op)
        if len(ids) != 1:
            self.fail(f"pd_op.fetch takes one operand, it has {len(ids)}")
        v = self.value(ids[0])
        if isinstance(v.name, list):
            self.fail("a fetch of a list of values")
        col = attrs_of(op, self).get("col", len(self.fetches))
        self.mark_tensor(v)
        self.fetches.append((col if isinstance(col, int) else len(self.fetches), v.name))

    def constant(self, name: str, op, i: int) -> None:
        attrs = attrs_of(op, self)
        res = self.results(op)
        shape, dtype, _ = res[0][1] if res else (None, None, False)
        dtype = dtype_attr(attrs.get("dtype")) or dtype or "float32"
        if name == "pd_op.full_int_array":
            value = attrs.get("value", [])
            if not isinstance(value, list) or not all(isinstance(x, int) for x in value):
                self.fail("full_int_array's value must be a list of integers")
            dtype = dtype if dtype in ("int32", "int64") else "int64"
            fill = Emit("assign_value", {}, {}, {"shape": [len(value)], "dtype": var_type(dtype),
                                                 f"{dtype}_values": [int(x) for x in value]}, i, keep=False)
        else:
            value = attrs.get("value", 0.0)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                self.fail("full's value must be a number")
            shape = attrs.get("shape", [1])
            if not isinstance(shape, list) or len(shape) > 64 or not all(
                    isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
                self.fail(f"full's shape must be at most 64 integers >= 0, got {str(shape)[:60]}")
            fill = Emit("fill_constant", {}, {}, {"shape": shape,
                                                  "value": float(value), "dtype": var_type(dtype)}, i, keep=False)
        out = self.fresh(self.stem(name.split(".", 1)[1]), "out")
        fill.outputs["Out"] = [out]
        self.emit(fill)
        self.define(op, 0, Value(name=out, dtype=dtype, shape=shape, const=value, maker=len(self.emitted) - 1))

    def mapped(self, name: str, spec: PirOp, op, i: int) -> None:
        if not has_op(spec.legacy):
            self.fail(f"kernelcore has no counterpart for PIR op {name!r} in this build (its row maps it to "
                      f"{spec.legacy!r}, which no op module registers)")
        ids = self.operands(op)
        if len(ids) != len(spec.inputs):
            self.fail(f"{len(ids)} operand(s); {name} takes {len(spec.inputs)} ({', '.join(spec.pir_inputs)})")
        inputs: dict[str, list[str]] = {}
        legacy_attrs = dict(spec.fixed)
        by_operand = {}
        for (pir_name, where), vid in zip(spec.inputs, ids):
            if vid == 0:
                continue  # an absent optional operand
            if where == "~":  # one the legacy op has no use for, though a result may alias it (array_write_)
                if self.values.get(vid) is not None:
                    by_operand[pir_name] = self.values[vid]
                continue
            v = self.value(vid)
            by_operand[pir_name] = v
            if where is None:
                self.fail(f"operand {pir_name!r} is given, but kernelcore's {spec.legacy} does not take it")
            attr, tensor_slot, list_slot = operand_targets(where)
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
        pir_attrs = attrs_of(op, self)
        if spec.operands_take_dtype:
            self.retype_constants(name, by_operand.values(), dtype_attr(pir_attrs.get("dtype")))
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
                legacy_attrs[legacy] = legacy_attr_value(value)
        if spec.input_dtype_attr:
            first = by_operand.get(spec.pir_inputs[0])
            if first is None or first.dtype not in VT_NAMES:
                self.fail(f"{name}'s operand has no known dtype")
            legacy_attrs[spec.input_dtype_attr] = var_type(first.dtype)
        opdef = get_op_def(spec.legacy)
        try:
            if spec.adjust is not None:
                spec.adjust(legacy_attrs)
            legacy_attrs = {k: coerce_attr(opdef, k, v) for k, v in legacy_attrs.items()}
        except ValueError as e:
            self.fail(f"an attribute of kernelcore's {spec.legacy}: {e}")
        stem = self.stem(name.split(".", 1)[1].rstrip("_"))
        outputs: dict[str, list[str]] = {}
        res = self.results(op)
        if len(res) != len(spec.outputs):
            self.fail(f"{len(res)} result(s); {name} gives {len(spec.outputs)}")
        for k, ((pir_out, slot), (_vid, (_shape, _dtype, is_list))) in enumerate(zip(spec.outputs, res)):
            if slot is None:
                self.define(op, k, Value(name=f"{stem}.{pir_out}", unused=True))
                continue
            slot, _, alias = slot.partition("=")
            if is_list:  # names come with the builtin.split that takes the list apart
                outputs[slot] = []
                self.define(op, k, Value(name=[], pending=(len(self.emitted), slot, stem)))
                continue
            if alias:
                src = by_operand.get(alias)
                if src is None or isinstance(src.name, list):
                    self.fail(f"result {pir_out!r} aliases operand {alias!r}, which is absent")
                out_name = src.name
                src.const = None  # written in place: no longer the constant it was made as
            else:
                out_name = self.fresh(stem, pir_out)
            self.define(op, k, Value(name=out_name))
            outputs[slot] = [out_name]
        for slot in spec.extra_outputs:
            outputs[slot] = [self.fresh(stem, slot.lower())]
        if spec.cast_result is not None:
            self.emit_with_cast(spec, inputs, outputs, legacy_attrs, i)
        else:
            self.emit(Emit(spec.legacy, inputs, outputs, legacy_attrs, i))

    def emit_with_cast(self, spec: PirOp, inputs: dict, outputs: dict, attrs: dict, i: int) -> None:
        """The legacy op writes `<result>.raw` in its own dtype; a cast gives the result Paddle declares."""
        (slot, (final,)), = outputs.items()
        raw = self.fresh(final, "raw")
        self.emit(Emit(spec.legacy, inputs, {slot: [raw]}, attrs, i))
        src, dst = spec.cast_result
        self.extra_types[raw] = (None, src)
        self.emit(Emit("cast", {"X": [raw]}, {"Out": [final]},
                       {"in_dtype": var_type(src), "out_dtype": var_type(dst)}, i))

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

    def retype_constants(self, name: str, operands, dtype: str | None) -> None:
        """Make the constants `operands` come from in `dtype` (an op whose dtype attribute its legacy twin reads
        from its operands); an operand computed at run time must already be of that dtype."""
        if dtype is None:
            return
        for v in operands:
            maker = self.emitted[v.maker] if v.maker is not None else None
            if maker is not None and maker.type == "fill_constant":
                maker.attrs["dtype"] = var_type(dtype)
                v.dtype = dtype
            elif v.dtype != dtype:
                self.fail(f"{name}'s operands must be constants (pd_op.full) or of its dtype {dtype} here")

    def mark_tensor(self, v: Value) -> None:
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
        with prog.block_guard(blocks[0]):  # the program stays current at block 0, as a loaded one is
            for parent in self.parents[1:]:
                blocks.append(prog.create_block(parent))
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
            create_var(blocks[b], name, shape, dtype)
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
                        create_var(blocks[e.block], n, *shapes.get(n, (None, None)))
                        declared.add(n)
            attrs = dict(e.attrs)
            sub = attrs.get("sub_block")
            inputs = dict(e.inputs)
            if isinstance(sub, BlockRef):
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

    def outer_reads(self, ops: list[Emit]) -> dict[int, list[str]]:
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
