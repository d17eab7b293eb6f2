"""The structure a program knows about itself, as groups for the program graph (ProgramJSON version 2).

A big program drawn op by op is a tangle; what a person reads is its layers. This module finds them
from what the program records, never from op indices alone:

- **stages**: forward, backward and optimize, from Paddle's `op_role` attribute (a bit set: 1 backward,
  2 optimize, 16 learning-rate schedule, 256 loss; 0 forward). Only where the attribute is absent (a
  hand-built desc) is the role read from the op type (`*_grad` backward, optimizer types optimize).
- **layers**: the `op_namescope` attribute (`/encoder/layer_0/`, Paddle's `name_scope`), then the name
  prefixes of the variables an op touches (`fc_12.w_0` -> `fc_12`; `encoder.layers.2.linear1.weight` ->
  `encoder` / `layers.2` / `linear1`). A forward op takes the prefix of its parameters, else of its
  outputs, else of its inputs; a backward op takes the layer of the forward op it differentiates; an
  optimizer op the layer of the parameter it updates (`op_role_var`, else its `Param` slot). Paddle's
  `/optimizer_N/` scopes name one optimizer op each and are not layers.
- **forward links**: a backward op `T_grad` links to the forward op of type `T` that wrote the variable
  whose gradient it reads (`Out@GRAD` -> `Out`), else the one that read the variable whose gradient it
  writes (`X@GRAD` -> `X`).
- **repeats**: three or more consecutive sibling groups with the same structure (the same op types, in
  order, nested alike) are wrapped in one `repeat` group that the view shows once, with its count.
- **ranges**: a group with more than CHUNK children is cut into `range` groups of at most CHUNK
  consecutive children (nested as often as needed), so opening any group shows a bounded number of things.

Everything here is linear in the size of the program and iterative (no recursion on nesting depth).
"""
from __future__ import annotations

import re

from ..ir import op_roles

STAGES = ("forward", "backward", "optimize")
CHUNK = 48          # at most this many children (ops and groups) shown when a group opens
REPEAT_MIN = 3      # this many identical consecutive siblings make a repeat group
_OPTIMIZER_SCOPE = re.compile(r"optimizer(_\d+)?\Z")
_NUMBERED = re.compile(r"(.*?)[_.]?\d+\Z")


def role_name(role_attr: int | None, op_type: str, optimize_types) -> str:
    """forward | backward | optimize from Paddle's op_role bits (the op type only when there is none)."""
    if role_attr is None:
        if op_type.endswith("_grad"):
            return "backward"
        return "optimize" if op_type in optimize_types else "forward"
    if role_attr & op_roles.BACKWARD:
        return "backward"
    if role_attr & (op_roles.OPTIMIZE | op_roles.LRSCHED):
        return "optimize"
    return "forward"


def _strip_grad(name: str) -> str:
    k = name.find("@GRAD")
    return name if k < 0 else name[:k]


def name_path(name: str) -> tuple[str, ...] | None:
    """The layer path a variable name implies: `fc_3.tmp_0` -> ("fc_3",); `encoder.layers.2.linear1.weight`
    -> ("encoder", "layers.2", "linear1"); a name with no dot (`x`, `tmp_3`) -> None."""
    name = _strip_grad(name)
    if "." not in name:
        return None
    parts = name.split(".")[:-1]
    out: list[str] = []
    for p in parts:
        if not p:
            continue
        if p.isdigit() and out:
            out[-1] = f"{out[-1]}.{p}"
        else:
            out.append(p)
    return tuple(out) or None


def scope_path(ns: str | None) -> tuple[str, ...]:
    if not ns:
        return ()
    parts = tuple(p for p in ns.split("/") if p)
    if parts and _OPTIMIZER_SCOPE.match(parts[0]):
        return ()
    return parts


def callsite(stack) -> str | None:
    """The line of user code that created an op, from Paddle's `op_callstack` (a traceback as strings,
    innermost frame last: `  File "f.py", line 3, in fn` then its source line): the innermost frame outside
    Paddle's own package and site-packages; None when there is none."""
    i = len(stack) - 1
    while i >= 0:
        s = stack[i]
        if s.startswith('  File "') and "site-packages" not in s and "/paddle/" not in s and "<frozen" not in s:
            m = _FRAME.match(s)
            if m:
                path, line, fn = m.groups()
                code = stack[i + 1].strip() if i + 1 < len(stack) else ""
                if code.startswith('File "'):
                    code = ""
                return f"{path}:{line} in {fn}" + (f": {code}" if code else "")
        i -= 1
    return None


_FRAME = re.compile(r'\s*File "(.*)", line (\d+), in (.*)')


class _G:
    __slots__ = ("id", "kind", "label", "parent", "kids", "sig", "first", "last", "ops", "count", "path")

    def __init__(self, kind: str, label: str, parent, path=()):
        self.id = ""
        self.kind = kind
        self.label = label
        self.parent = parent
        self.kids: list = []  # ints (op indices) and _G
        self.sig = None
        self.first = self.last = -1
        self.ops = 0
        self.count = 0
        self.path = path


def _base(label: str) -> str:
    """`fc_12` -> `fc`, `layer_0/fc_3` -> `layer/fc`: the label without the numbers that tell repeats apart."""
    out = []
    for part in label.split("/"):
        m = _NUMBERED.match(part)
        out.append(m.group(1) if m and m.group(1) else part)
    return "/".join(out)


def block_groups(b: int, ops: list, roles: list, param_names) -> tuple[list[dict], list, list]:
    """Groups of one block. `ops`: per op a record (type, input names, output names, sub-block indices,
    op_role attribute, namescope, role_var, names in the op's `Param` slot or None), the name lists flat
    (every slot's names in slot order); `roles`: per op forward | backward | optimize (role_name).
    Returns (groups as JSON, innermost group id per op (or None), forward op index per op (or None))."""
    n = len(ops)
    # forward links
    fwd = [None] * n
    writer: dict[str, int] = {}
    reader: dict[tuple[str, str], int] = {}
    for i, rec in enumerate(ops):
        role = roles[i]
        typ = rec[0]
        if role == "forward":
            for nm in rec[1]:
                reader[(nm, typ)] = i
            for nm in rec[2]:
                writer[nm] = i
        elif role == "backward" and typ.endswith("_grad"):
            base = typ[:-5]
            hit = None
            for nm in rec[1]:
                if "@GRAD" in nm:
                    w = writer.get(_strip_grad(nm))
                    if w is not None and ops[w][0] == base:
                        hit = w
                        break
            if hit is None:
                for nm in rec[2]:
                    r = reader.get((_strip_grad(nm), base))
                    if r is not None:
                        hit = r
                        break
            fwd[i] = hit
    # layer path per op
    paths: list[tuple] = [()] * n
    scopes: dict = {}  # namescope -> its path (a program has few distinct scopes)
    prefixes: dict = {}  # what precedes a name's last dot -> name_path
    for i, (typ, ins, outs, _subs, _role_attr, ns, role_var, param) in enumerate(ops):
        role = roles[i]
        if role == "backward" and fwd[i] is not None:
            paths[i] = paths[fwd[i]]
            continue
        sp = scopes.get(ns)
        if sp is None:
            sp = scopes[ns] = scope_path(ns)
        npth = None
        for nm in _candidates(role, ins, outs, role_var, param, param_names):
            # name_path reads only what precedes the last dot: the variables of a layer share it
            base = _strip_grad(nm)
            dot = base.rfind(".")
            if dot < 0:
                continue
            pre = base[:dot]
            npth = prefixes.get(pre, _UNSEEN)
            if npth is _UNSEEN:
                npth = prefixes[pre] = name_path(base)
            if npth:
                break
        if npth and sp and npth[: len(sp)] == sp:
            sp = ()
        paths[i] = sp + npth if npth else sp
    # the tree: stages, then runs of consecutive ops sharing a path prefix
    root = _G("block", "", None)
    present = [s for s in STAGES if s in set(roles)]
    use_stages = len(present) > 1
    stage_of: dict[str, _G] = {}
    cur_stage = None
    stack: list[_G] = []
    prev_p = None
    for i in range(n):
        role = roles[i]
        p = paths[i]
        if use_stages:
            if cur_stage is None or cur_stage.label != role:
                cur_stage = _G("stage", role, root)
                root.kids.append(cur_stage)
                stage_of.setdefault(role, cur_stage)
                stack = [cur_stage]
                prev_p = None
        elif not stack:
            stack = [root]
        if p == prev_p:  # the common case: the same layer as the op before
            stack[-1].kids.append(i)
            continue
        prev_p = p
        # keep the open groups whose path is a prefix of p
        depth = 0
        while depth + 1 < len(stack) and depth < len(p) and stack[depth + 1].path == p[: depth + 1]:
            depth += 1
        del stack[depth + 1:]
        for d in range(depth, len(p)):
            g = _G("layer", p[d], stack[-1], p[: d + 1])
            stack[-1].kids.append(g)
            stack.append(g)
        stack[-1].kids.append(i)
    _simplify(root, ops, paths)
    # ids, JSON, innermost group per op
    inner: list = [None] * n
    out: list[dict] = []
    k = 0
    todo = [root]
    while todo:
        g = todo.pop()
        if g is not root:
            g.id = f"group_{b}_{k}"
            k += 1
        for c in g.kids:
            if isinstance(c, int):
                inner[c] = g.id or None
        todo.extend(reversed([c for c in g.kids if not isinstance(c, int)]))
    todo = [root]
    while todo:
        g = todo.pop()
        if g is not root:
            d = {"id": g.id, "kind": g.kind, "label": g.label, "parent": g.parent.id or None,
                 "first": g.first, "last": g.last, "ops": g.ops}
            if g.kind == "repeat":
                d["count"] = g.count
            out.append(d)
        todo.extend(reversed([c for c in g.kids if not isinstance(c, int)]))
    return out, inner, fwd


def _candidates(role: str, ins, outs, role_var, param, param_names):
    """The names whose prefixes may name an op's layer, best first: an optimizer op's parameter
    (role_var, else its Param slot); a forward op's parameters, then outputs, then inputs; any other op's
    outputs, then inputs."""
    if role == "optimize":
        yield from role_var[:1]
        if param:
            yield from param
    elif role == "forward":
        for nm in ins:
            if nm in param_names:
                yield nm
        yield from outs
        yield from ins
    else:
        yield from outs
        yield from ins


def _simplify(root: _G, ops, paths: list[tuple]) -> None:
    """Bottom up: dissolve groups of one op, merge one-child chains, find repeats, cut ranges; fill
    first/last/ops/sig."""
    order: list[_G] = []
    todo = [root]
    while todo:
        g = todo.pop()
        order.append(g)
        todo.extend(c for c in g.kids if not isinstance(c, int))
    sigs: dict = {}
    for g in reversed(order):  # kids before parents
        kids = []
        for c in g.kids:
            if isinstance(c, int) or c.kind == "stage":
                kids.append(c)
            elif c.ops <= 1 and len(c.kids) == 1 and isinstance(c.kids[0], int):
                kids.append(c.kids[0])  # a layer of one op is that op
            elif len(c.kids) == 1 and not isinstance(c.kids[0], int) and c.kids[0].kind == "layer":
                only = c.kids[0]
                only.label = f"{c.label}/{only.label}"
                only.parent = g
                kids.append(only)
            else:
                kids.append(c)
        if g.kind != "block":
            kids = _repeats(g, kids, sigs, paths, ops)
        kids = _ranges(g, kids, paths, ops)
        g.kids = kids
        _fill(g, ops, sigs)


_UNSEEN = object()
_REPEAT_SIG = object()  # heads a repeat's signature key: no group's key (types and ints) starts with it


def _fill(g: _G, ops, sigs) -> None:
    """A group's op count, op range and structure signature from its kids. Kids are in program order and
    every group covers a contiguous run of ops (a group closes for good when an op leaves its path), so
    the range runs from the first kid's first op to the last kid's last. An op kid's part of the
    signature is its type (a str), a group kid's its signature (an int): the two never collide."""
    kids = g.kids
    total = 0
    key = []
    add = key.append
    for c in kids:
        if c.__class__ is int:
            total += 1
            add(ops[c][0])
        else:
            total += c.ops
            add(c.sig)
    g.ops = total
    if kids:
        a, z = kids[0], kids[-1]
        g.first = a if a.__class__ is int else a.first
        g.last = z if z.__class__ is int else z.last
    else:
        g.first = g.last = -1
    g.sig = sigs.setdefault(tuple(key), len(sigs))


def _repeats(g: _G, kids: list, sigs, paths: list[tuple], ops) -> list:
    out: list = []
    i = 0
    while i < len(kids):
        c = kids[i]
        j = i + 1
        if not isinstance(c, int) and c.kind == "layer":
            while j < len(kids) and not isinstance(kids[j], int) and kids[j].kind == "layer" and kids[j].sig == c.sig:
                j += 1
        if j - i >= REPEAT_MIN:
            run = kids[i:j]
            bases = {_base(x.label) for x in run}
            label = (f"{bases.pop()} \u00d7{len(run)}" if len(bases) == 1
                     else f"{run[0].label} \u2026 {run[-1].label} \u00d7{len(run)}")
            r = _G("repeat", label, g)
            r.kids = run
            r.count = len(run)
            for x in run:
                x.parent = r
            r.kids = _ranges(r, run, paths, ops)
            _fill_repeat(r, sigs, run[0].sig)
            out.append(r)
        else:
            out.extend(kids[i:j])
        i = j
    return out


def _fill_repeat(r: _G, sigs, inner) -> None:
    r.ops = sum(1 if isinstance(c, int) else c.ops for c in r.kids)
    r.first = min(c if isinstance(c, int) else c.first for c in r.kids)
    r.last = max(c if isinstance(c, int) else c.last for c in r.kids)
    r.sig = sigs.setdefault((_REPEAT_SIG, r.count, inner), len(sigs))


def _label_of(c, paths: list[tuple], ops) -> str:
    """A group's label; an op's layer path (its parameters' prefix, `conv2d_3`, in a legacy program), or its
    type and index where it has none (`feed #0`)."""
    if not isinstance(c, int):
        return c.label
    return "/".join(paths[c]) if paths[c] else f"{ops[c][0]} #{c}"


def _ranges(g: _G, kids: list, paths: list[tuple], ops) -> list:
    """Cut `kids` into `range` groups of at most CHUNK, nested until at most CHUNK remain. A range is named by
    what it starts and ends with (layers, or ops by their layer path); only ops without one give index ranges."""
    while len(kids) > CHUNK:
        size = CHUNK
        chunks = []
        for s in range(0, len(kids), size):
            part = kids[s: s + size]
            if len(part) == 1:
                chunks.append(part[0])
                continue
            r = _G("range", "", g)
            r.kids = part
            for x in part:
                if not isinstance(x, int):
                    x.parent = r
            r.ops = sum(1 if isinstance(c, int) else c.ops for c in part)
            r.first = min(c if isinstance(c, int) else c.first for c in part)
            r.last = max(c if isinstance(c, int) else c.last for c in part)
            a, z = part[0], part[-1]
            if isinstance(a, int) and isinstance(z, int) and not (paths[a] or paths[z]):
                r.label = f"ops #{a}\u2013#{z}"
            else:
                r.label = f"{_label_of(a, paths, ops)} \u2026 {_label_of(z, paths, ops)} ({len(part)})"
            r.sig = ("range", id(r))
            chunks.append(r)
        kids = chunks
    return kids
