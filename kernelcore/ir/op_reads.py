"""What the outline of a program (kernelcore/view/program_parts.py) reads of each op, and when it is read.

Per op, one record: (type, input names, output names, sub-block indices, op_role or None, namescope,
role_var, the names in the `Param` slot or None), the names flat in slot order. hierarchy.block_groups and
var_uses.BlockUses take these records.

Two readers make the same records:
  * `read_ops` from the desc's OpDescs (a program built or edited in Python);
  * `read_loaded` from the twin parse that loading makes anyway to check UTF-8 (proto/wire_twin.py), where
    an op's slot names are one flat list each, so reading them skips the desc's wrappers. A program of more
    than LAZY_ABOVE ops read from a file keeps these records (Program.outline_reads) until it is edited, so
    the first display of a big program does not walk its OpDescs again.
"""
from __future__ import annotations

import contextlib
import gc

from . import attrs as attrlib

# Ops in all blocks above which the MIME bundle, the widget and the file viewer send the skeleton only
# (and loading keeps the outline's records): past it the whole JSON made main-thread tasks in the browser
# longer than its task budget (docs/benchmarks.md has the measurements); below it the whole JSON fits the
# budget, and saved notebooks of such programs still draw every group with no kernel.
LAZY_ABOVE = 2_000

_ROLE_NAMES = {"op_role": 0, "op_namescope": 1, "op_role_var": 2}
# the role attributes' types as Paddle writes them; others are read by _scan_attrs
_A_INT, _A_STRING, _A_STRINGS = int(attrlib.A.INT), int(attrlib.A.STRING), int(attrlib.A.STRINGS)
_A_BLOCK, _A_BLOCKS = attrlib.T_BLOCK, attrlib.T_BLOCKS


@contextlib.contextmanager
def no_gc(lasting: bool = False):
    """Tens of thousands of small objects made at once: the cyclic collector would walk the whole heap
    (the records themselves included) dozens of times for nothing; nothing built here makes a cycle.

    `lasting`: what is made here lives as long as the program (the outline). Re-enabled as it was, the
    collector would walk all of it once more at the next allocation (a young generation of millions of
    objects), so it goes straight to the oldest generation instead:
    freeze moves every tracked object to the permanent generation and unfreeze hands them all to the
    oldest, neither walking them. So that only what was made here is moved, the young generations are
    collected first (they are small: a collection of them is cheap), and whatever the process had there is
    dealt with as it would have been. Where the process froze objects of its own, nothing is moved and the
    collector pays instead."""
    enabled = gc.isenabled()
    promote = lasting and enabled and gc.get_freeze_count() == 0
    if promote:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if promote:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _value(a):
    try:
        return attrlib.json_value(a)
    except (TypeError, ValueError):
        return None


def _scan_attrs(op, want_subs: bool):
    """Every attribute of `op` looked at: (role, namescope, role_var, sub-block indices, positions of the
    three role attributes (-1: absent)). The three are read as display.read_op reads them: the first copy
    of each, by its value (an integer role: an INT, a LONG, a BOOLEAN; a string namescope; a role_var of
    strings; a value of another type counts as absent)."""
    role = ns = None
    role_var: list = []
    subs: list = []
    pos = [-1, -1, -1]
    for k, a in enumerate(op.attrs):
        name = a.name
        if name in _ROLE_NAMES and pos[_ROLE_NAMES[name]] >= 0:
            continue  # the first copy counts (display.read_op)
        if name == "op_role":
            v = _value(a)
            role = v if isinstance(v, int) else None
            pos[0] = k
        elif name == "op_namescope":
            v = _value(a)
            ns = v if isinstance(v, str) else None
            pos[1] = k
        elif name == "op_role_var":
            v = _value(a)
            role_var = v if isinstance(v, list) and all(isinstance(x, str) for x in v) else []
            pos[2] = k
        elif want_subs:
            t = a.type
            if t == _A_BLOCK:
                subs.append(a.block_idx)
            elif t == _A_BLOCKS:
                subs.extend(a.blocks_idx)
    return role, ns, role_var, subs, tuple(pos)


class _Roles:
    """The three role attributes of ops, read where each op type kept them last time.

    A Paddle op carries a dozen attributes and the hierarchy wants three of them; every attribute looked at
    costs a protobuf wrapper. Ops of one type list their attributes in the same order, so where an op's
    three sit is remembered per type and checked by name and type, with the op's attribute count (a miss
    scans the op). Positions are those of first copies, as both readers take the first copy; only an op
    that repeats one of the three *in front of* where its type keeps it, with the same attribute count,
    would be read from its second copy (Paddle writes each once). Sub-block attributes can sit anywhere,
    so where they matter (a program of more than one block) every attribute is looked at."""

    __slots__ = ("want_subs", "where")

    def __init__(self, want_subs: bool):
        self.want_subs = want_subs
        self.where: dict = {}   # op type -> (n attrs, positions of op_role, op_namescope, op_role_var)

    def read(self, typ: str, op):
        """(sub-block indices, role, namescope, role_var) of `op`."""
        if not self.want_subs:
            hit = self.where.get(typ)
            if hit is not None:
                attrs = op.attrs
                if len(attrs) == hit[0]:
                    kr, kn, kv = hit[1]
                    a_role, a_ns, a_rv = attrs[kr], attrs[kn], attrs[kv]
                    if (a_role.name == "op_role" and a_ns.name == "op_namescope" and a_rv.name == "op_role_var"
                            and a_role.type == _A_INT and a_ns.type == _A_STRING and a_rv.type == _A_STRINGS):
                        return [], a_role.i, a_ns.s, list(a_rv.strings)
        role, ns, role_var, subs, pos = _scan_attrs(op, self.want_subs)
        if not self.want_subs and -1 not in pos:
            # remembered only when the op carries all three (Paddle's ops do): an absent one has no
            # position to check
            self.where[typ] = (len(op.attrs), pos)
        return subs, role, ns, role_var


def read_ops(ops, want_subs: bool) -> list:
    """The records of a block's OpDescs."""
    out = []
    append = out.append
    roles = _Roles(want_subs)
    for op in ops:
        typ = op.type
        ins: list = []
        param = None
        for s in op.inputs:
            args = s.arguments
            if s.parameter == "Param":  # every slot so named, in order (as display.program_json reads them)
                param = (param or []) + list(args)
            ins += args
        outs: list = []
        for s in op.outputs:
            outs += s.arguments
        subs, role, ns, role_var = roles.read(typ, op)
        append((typ, ins, outs, subs, role, ns, role_var, param))
    return out


def read_loaded(twin_ops, ops, want_subs: bool) -> list:
    """The records of a block from its twin ops (proto/wire_twin.py: slot names flat); `ops` are the
    desc's, read for the role attributes (the twin merges an op's attributes) and for the rare op with a
    `Param` slot (which names sit in it)."""
    out = []
    append = out.append
    roles = _Roles(want_subs)
    for op, desc_op in zip(twin_ops, ops):
        typ = op.type
        vin = op.inputs
        param = None
        if "Param" in vin.parameter:
            param = [a for s in desc_op.inputs if s.parameter == "Param" for a in s.arguments]
        subs, role, ns, role_var = roles.read(typ, desc_op)
        append((typ, list(vin.arguments), list(op.outputs.arguments), subs, role, ns, role_var, param))
    return out


def attr_types(twin) -> list[list[list[int]]]:
    """Per block, per op: the types of its attributes, from the twin (one call per op)."""
    return [[list(op.attrs.type) for op in tb.ops] for tb in twin.blocks]


def read_program(twin, desc) -> list[list]:
    """Every block's records from the twin of `desc` (both parsed from the same bytes)."""
    many = len(desc.blocks) > 1
    with no_gc(lasting=True):
        return [read_loaded(tb.ops, b.ops, many) for tb, b in zip(twin.blocks, desc.blocks)]
