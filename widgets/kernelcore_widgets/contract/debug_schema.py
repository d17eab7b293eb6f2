"""The debug protocol's JSON schema (debug_protocol.schema.json, beside the package) with the parts the
command table decides written in from it: the `Command` enum, the request arguments, the named choices
(`BreakKind`, `WatchCond`, `SendWhat`), and `ValuePreview`, taken from the front-end contract
(kernelcore/contract.schema.json) rather than described twice. The rest of the file (the replies and the
state) is written by hand."""
from __future__ import annotations

from .commands import CHOICES, COMMANDS, Arg


def _arg_note(a: Arg) -> str:
    return a.name + ("" if a.required else "?")


def args_schema() -> dict:
    """One object holding every command's arguments (a name means the same in each command that takes it)."""
    props: dict = {}
    for c in COMMANDS:
        for a in c.args:
            s = a.schema()
            if props.setdefault(a.name, s) != s:
                props[a.name] = _merge(props[a.name], s, a.name)
    notes = "; ".join(f"{c.name}: {', '.join(_arg_note(a) for a in c.args)}" for c in COMMANDS if c.args)
    return {"type": "object", "description": f"by command (commands.py): {notes}", "properties": props}


def _merge(a: dict, b: dict, name: str) -> dict:
    """Two commands give argument `name` different schemas: the union of their types (str and opt_str)."""
    if set(a) != {"type"} or set(b) != {"type"}:
        raise ValueError(f"argument {name!r} has two schemas in commands.py: {a} and {b}")
    types = [t for s in (a, b) for t in (s["type"] if isinstance(s["type"], list) else [s["type"]])]
    return {"type": sorted(set(types), key=types.index)}


def build(hand: dict, contract: dict) -> dict:
    """`hand` (the schema file as read) with the table's parts written in."""
    defs = dict(hand["$defs"])
    defs["Command"] = {"description": "generated from kernelcore_widgets/contract/commands.py",
                       "enum": [c.name for c in COMMANDS]}
    for name, choices in CHOICES.items():
        defs[name] = {"description": "generated from kernelcore_widgets/contract/commands.py", "enum": list(choices)}
    request = dict(defs["Request"])
    request["properties"] = {**request["properties"], "args": args_schema()}
    defs["Request"] = request
    defs["ValuePreview"] = contract["$defs"]["ValuePreview"]
    defs["SampleValue"] = contract["$defs"]["SampleValue"]
    return {**hand, "$defs": defs}
