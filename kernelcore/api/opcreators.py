"""Python op creators, derived from the registry (one function per registered op type).

`kc.op.elementwise_add(x, y, axis=0)` appends an `elementwise_add` op to the
current block of the current program and returns its output Variable(s).
Positional arguments fill the op's input slots in OpProto order; keywords name
input slots or attributes; output variables are created with unique names and
their shapes inferred. Nothing here is written per op.
"""
from __future__ import annotations

import functools

from ..errors import OpValidationError
from ..ir.program import Variable, default_main_program
from ..ir.registry import all_op_defs, get_op_def


def append(op_type: str, *args, out=None, **kwargs):
    """Append one `op_type` op; return its non-intermediate outputs (one Variable, or a tuple)."""
    opdef = get_op_def(op_type)
    where = f"{op_type}()"
    block = default_main_program().current_block()
    inputs, attrs = {}, {}
    slots = [s for s in opdef.inputs]
    if len(args) > len(slots):
        raise OpValidationError(f"{where} takes at most {len(slots)} positional inputs "
                                f"({[s.name for s in slots]}), got {len(args)}")
    for s, a in zip(slots, args):
        inputs[s.name] = a
    slot_names = {s.name for s in slots}
    for k, v in kwargs.items():
        if k in slot_names:
            if k in inputs:
                raise OpValidationError(f"{where}: input {k!r} given twice")
            inputs[k] = v
        else:
            attrs[k] = v
    outputs = {}
    given_out = out if isinstance(out, dict) else ({opdef.outputs[0].name: out} if out is not None else {})
    for s in opdef.outputs:
        if s.name in given_out:
            outputs[s.name] = given_out[s.name]
        elif not s.dispensable or s.intermediate:
            # a duplicable output (split's Out) gets as many variables as the attributes ask for
            n = (attrs.get("num") or len(attrs.get("sections") or ()) or 1) if s.duplicable else 1
            outputs[s.name] = [block.program.unique_name(f"{op_type}.{s.name.lower()}") for _ in range(n)]
    op = block.append_op(op_type, inputs={k: v for k, v in inputs.items() if v is not None},
                         outputs=outputs, attrs=attrs)
    results = []
    for s in opdef.outputs:
        if s.intermediate or s.name not in outputs:
            continue
        vs = [block.find_var_recursive(n) for n in op.output(s.name)]
        results.append(vs if s.duplicable else vs[0])
    return results[0] if len(results) == 1 else tuple(results)


@functools.lru_cache(maxsize=None)
def _creator(op_type: str):
    opdef = get_op_def(op_type)

    def creator(*args, **kwargs):
        return append(op_type, *args, **kwargs)

    creator.__name__ = creator.__qualname__ = op_type
    ins = ", ".join(s.name + ("?" if s.dispensable else "") + ("..." if s.duplicable else "") for s in opdef.inputs)
    attr_lines = "\n".join(f"    {a.name} = {a.default!r}: {a.comment}" for a in opdef.attrs.values()
                           if not a.extra)
    creator.__doc__ = f"{opdef.comment}\n\nInputs: {ins}\nAttributes:\n{attr_lines or '    (none)'}"
    return creator


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return _creator(name)
    except Exception:
        raise AttributeError(f"no op named {name!r}") from None


def __dir__():
    return sorted(all_op_defs())


__all__ = ["append", "Variable"]
