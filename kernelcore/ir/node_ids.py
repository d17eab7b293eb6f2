"""The ids that name an op or a variable of a program by where it stands: "o{block}:{index}" and "v{block}:{name}".

They belong to the program, not to any one view of it: a prune result names what it removed by them, the
ProgramJSON keys its nodes by them, and the widgets send them back to say which node a click meant.
"""
from __future__ import annotations

import re

_OP_ID = re.compile(r"o(\d+):(\d+)\Z")
_VAR_ID = re.compile(r"v(\d+):(.+)\Z", re.S)


def op_id(block: int, idx: int) -> str:
    return f"o{block}:{idx}"


def var_id(block: int, name: str) -> str:
    return f"v{block}:{name}"


def parse_node_id(node_id: str) -> tuple | None:
    """("op", block, index) for an op id, ("var", block, name) for a var id, None for anything else:
    the only reader of the ids op_id and var_id write."""
    if not isinstance(node_id, str):
        return None
    m = _OP_ID.match(node_id)
    if m:
        return "op", int(m.group(1)), int(m.group(2))
    m = _VAR_ID.match(node_id)
    if m:
        return "var", int(m.group(1)), m.group(2)
    return None
