"""The deterministic text form of a ProgramDesc: what print(program) shows and tests compare."""
from __future__ import annotations

from . import attrs as attrlib
from . import dtypes
from .proto import framework_pb2 as pb
from ..text_safety import safe_name

VT = pb.VarType
A = pb.AttrType
# Attributes left out of the text form: long and machine-specific.
HIDDEN_IN_TEXT = frozenset({"op_callstack", "op_namescope", "op_device", "with_quant_attr"})

def var_text(d: pb.VarDesc) -> str:
    t = d.type
    kind = VT.Type.Name(t.type) if t.type in VT.Type.values() else str(t.type)
    td = dtypes.tensor_desc(d)
    if td is not None:
        dims = ", ".join(str(x) for x in td.dims)
        body = f"{dtypes.type_name(td.data_type)}[{dims}]"
        if kind != "LOD_TENSOR":
            body = f"{kind}<{body}>"
    else:
        body = kind
    flags = [f for f, on in (("persistable", d.persistable), ("parameter", d.is_parameter),
                             ("stop_gradient", d.stop_gradient)) if on]
    return f"{safe_name(d.name)}: {body}" + (f" ({', '.join(flags)})" if flags else "")


def _attr_value_text(a) -> str:
    v = attrlib.read(a)
    if a.type == A.BLOCK:
        return f"block {v}"
    if a.type == A.BLOCKS:
        return "blocks " + repr(v)
    if isinstance(v, float):
        return repr(float(f"{v:.7g}"))  # float32 storage: print what was meant
    if isinstance(v, list) and v and isinstance(v[0], float):
        return "[" + ", ".join(repr(float(f"{x:.7g}")) for x in v) + "]"
    return repr(v)


def op_text(d: pb.OpDesc) -> str:
    def slots(vs):
        return ", ".join(f"{safe_name(v.parameter)}=[{', '.join(map(safe_name, v.arguments))}]" for v in vs)
    attrs = sorted((a for a in d.attrs if a.name not in HIDDEN_IN_TEXT), key=lambda a: a.name)
    text = f"{safe_name(d.type)}({slots(d.inputs)}) -> ({slots(d.outputs)})"
    if attrs:
        text += " {" + ", ".join(f"{safe_name(a.name)}={_attr_value_text(a)}" for a in attrs) + "}"
    return text


def program_text(desc: pb.ProgramDesc) -> str:
    lines = []
    for b in desc.blocks:
        lines.append(f"block {b.idx} (parent {b.parent_idx}):")
        for v in sorted(b.vars, key=lambda v: v.name):
            lines.append(f"  var {var_text(v)}")
        for i, op in enumerate(b.ops):
            lines.append(f"  op #{i} {op_text(op)}")
    return "\n".join(lines)
