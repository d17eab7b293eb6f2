"""Python TypedDicts from a JSON schema's $defs (the same subset gen_ts.py reads), for contract/wire_types.py."""
from __future__ import annotations

import json
import keyword

PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def py_type(s: dict) -> str:
    if "$ref" in s:
        return s["$ref"].rsplit("/", 1)[-1]
    if "const" in s:
        return f"Literal[{_literal(s['const'])}]"
    if "enum" in s:
        values = [v for v in s["enum"] if v is not None]
        lit = f"Literal[{', '.join(_literal(v) for v in values)}]"
        return lit + (" | None" if None in s["enum"] else "")
    if "anyOf" in s:
        return " | ".join(py_type(x) for x in s["anyOf"])
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(py_type({**s, "type": x}) for x in t)
    if t == "array":
        if "prefixItems" in s:
            return "tuple[" + ", ".join(py_type(x) for x in s["prefixItems"]) + "]"
        return f"list[{py_type(s.get('items', {}))}]"
    if t == "object":
        extra = s.get("additionalProperties")
        return f"dict[str, {py_type(extra)}]" if isinstance(extra, dict) and extra else "dict[str, Any]"
    return PRIMITIVES.get(t, "Any")


def _literal(v) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


def _field(name: str, p: dict, required: set) -> str:
    t = py_type(p)
    return t if name in required else f"NotRequired[{t}]"


def typed_dict(name: str, s: dict) -> list[str]:
    props, required = s["properties"], set(s.get("required", ()))
    doc = s.get("description")
    if not all(k.isidentifier() and not keyword.iskeyword(k) for k in props):  # "from": the functional form
        fields = ", ".join(f"{json.dumps(k)}: {_field(k, p, required)}" for k, p in props.items())
        return ([f"# {doc}"] if doc else []) + [f"{name} = TypedDict({json.dumps(name)}, {{{fields}}})"]
    lines = [f"class {name}(TypedDict):"]
    if doc:
        lines.append(f'    """{doc}"""')
    for k, p in props.items():
        note = f"  # {p['description']}" if p.get("description") else ""
        lines.append(f"    {k}: {_field(k, p, required)}{note}")
    return lines


def declarations(defs: dict, skip: tuple = ()) -> list[str]:
    out = []
    for name, s in defs.items():
        if name in skip:
            continue
        if s.get("type") == "object" and s.get("properties"):
            out += typed_dict(name, s)
        else:
            out += ([f"# {s['description']}"] if s.get("description") else []) + [f"{name} = {py_type(s)}"]
        out += ["", ""]
    return out
