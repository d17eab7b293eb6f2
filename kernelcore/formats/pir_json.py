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
from pathlib import Path

from ..errors import LoadError
from ..ir.program import Program
from .pir_reader import Reader

# A large model's PIR program is tens of MB; parsing JSON takes about ten times its size in memory, so a
# bigger file is refused before it is read.
MAX_PIR_BYTES = 256 << 20


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
        return Reader(source).read(doc)
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
