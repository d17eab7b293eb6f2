"""TypeScript types from a JSON schema's $defs (the subset the contracts use: objects, arrays and tuples, enums
and consts, unions, $refs), for labextension/src/*.generated.ts."""
from __future__ import annotations

import json

PRIMITIVES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def ts_type(s: dict, indent: str = "") -> str:
    if "$ref" in s:
        return s["$ref"].rsplit("/", 1)[-1]
    if "const" in s:
        return json.dumps(s["const"])
    if "enum" in s:
        return " | ".join(json.dumps(v) for v in s["enum"])
    if "anyOf" in s:
        return " | ".join(_paren(ts_type(x, indent)) for x in s["anyOf"])
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(ts_type({**s, "type": x}, indent) for x in t)
    if t == "array":
        if "prefixItems" in s:
            return "[" + ", ".join(ts_type(x, indent) for x in s["prefixItems"]) + "]"
        return f"{_paren(ts_type(s.get('items', {}), indent))}[]"
    if t == "object":
        extra = s.get("additionalProperties")
        if not s.get("properties"):
            return f"Record<string, {ts_type(extra, indent) if isinstance(extra, dict) else 'unknown'}>"
        return object_body(s, indent)
    if t in PRIMITIVES:
        return PRIMITIVES[t]
    return "unknown"


def _paren(t: str) -> str:
    return f"({t})" if " | " in t else t


def object_body(s: dict, indent: str = "") -> str:
    required = set(s.get("required", ()))
    lines = ["{"]
    for name, p in s["properties"].items():
        doc = p.get("description")
        if doc:
            lines.append(f"{indent}  /** {doc} */")
        key = name if name.isidentifier() else json.dumps(name)
        lines.append(f"{indent}  {key}{'' if name in required else '?'}: {ts_type(p, indent + '  ')};")
    if s.get("additionalProperties", True) is not False and s.get("type") == "object" and not s.get("required"):
        lines.append(f"{indent}  [key: string]: unknown;")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def declarations(defs: dict, skip: tuple = ()) -> list[str]:
    """`export interface` / `export type` lines for each definition (those in `skip` are imported instead)."""
    out = []
    for name, s in defs.items():
        if name in skip:
            continue
        if s.get("description"):
            out.append(f"/** {s['description']} */")
        if s.get("type") == "object" and s.get("properties"):
            out.append(f"export interface {name} {object_body(s)}")
        else:
            out.append(f"export type {name} = {ts_type(s)};")
        out.append("")
    return out
