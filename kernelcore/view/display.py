"""What notebooks show of programs and traces: ProgramJSON, DOT and MIME bundles.

This is the engine side of the front end's contract (docs/frontend-contract.md). It imports nothing
from Jupyter: view/notebook.py hands a Program's and a Trace's bundles to IPython, and the widgets
(kernelcore_widgets) build their state from `program_json`.

Every string here may come from a file the user did not write. The JSON carries names as data (the
browser renders them as text); the DOT source quotes every id and label itself (below) so that no name
can end a string, start an HTML-like label or smuggle a Graphviz escape (\\N, \\l) into a label.
"""
from __future__ import annotations

import collections
import heapq
import html
import shutil
import subprocess

from ..ir import attrs as attrlib
from ..ir.attrs import json_value
from ..ir import dtypes
from . import hierarchy
from ..errors import KernelcoreError
from ..text_safety import safe_name, safe_text
from ..ir.node_ids import op_id, var_id
from ..ir.structure import block_refs
from ..ir.proto import framework_pb2 as pb

PROGRAM_MIME = "application/vnd.kernelcore.program+json"
TRACE_MIME = "application/vnd.kernelcore.trace+json"
SCHEMA = "kernelcore.program"
VERSION = 3
TRACE_EVENT_LIMIT = 20_000  # events beyond this are cut from the trace MIME bundle
SVG_NODE_LIMIT = 1_000      # above this, text/html carries no static SVG (system dot gets slow)
TEXT_LINE_LIMIT = 2_000     # the MIME bundle's text form stops after this many lines
SVG_TIMEOUT_S = 1.0  # the static fallback's layout budget; past it the fallback is the text alone

VT = pb.VarType
A = pb.AttrType
# Paddle's optimizer op types (the contract names sgd/momentum/adam; the rest are their siblings).
OPTIMIZE_OPS = frozenset({"sgd", "momentum", "adam", "adamw", "adamax", "adagrad", "adadelta", "rmsprop", "lamb",
                          "lars_momentum", "ftrl", "decayed_adagrad", "dpsgd", "merged_adam", "merged_momentum"})


def _sub_block_idxs(op_desc) -> list[int]:
    return [j for _, j in block_refs(op_desc)]


def _declaring_block(desc, declared: list[set], block: int, name: str) -> int | None:
    """The block that declares `name` as seen from `block` (it, or the nearest parent)."""
    b = block
    while b >= 0:  # a parent is an earlier block (structure.check_structure): this ends
        if name in declared[b]:
            return b
        b = desc.blocks[b].parent_idx
    return None


def _execution_order(desc):
    """(block, op index, op desc, "in" | "out") in the order a run meets them: an op's inputs are read
    ("in"), then the blocks it runs, then its outputs are written ("out"). Blocks no op runs come last.
    Iterative (an explicit stack, _walk_records), so nesting depth costs no Python recursion."""
    reads = [[(None, None, None, _sub_block_idxs(op)) for op in blk.ops] for blk in desc.blocks]
    return [(b, i, desc.blocks[b].ops[i], phase) for b, i, phase in _walk_records(reads)]


def _walk_records(reads):
    """(block, op index, "in" | "out") in execution order over per-block op records (type, ins, outs,
    sub-blocks; only the sub-blocks are read here), each block once, an explicit stack in place of recursion."""
    n = len(reads)
    seen = bytearray(n)
    for root in range(n):
        stack = [(root, 0, False, True)]
        while stack:
            b, i, after, fresh = stack.pop()
            if fresh:
                if seen[b]:
                    continue
                seen[b] = 1
            recs = reads[b]
            if after:
                yield b, i, "out"
                i += 1
            if i >= len(recs):
                continue
            yield b, i, "in"
            stack.append((b, i, True, False))
            for j in reversed(recs[i][3]):
                if 0 <= j < n:
                    stack.append((j, 0, False, True))


def _var_kinds(desc, declared: list[set], reads=None) -> dict[tuple[int, str], str]:
    """(block, name) -> data|param|grad|tmp|other, by the contract's rules (`var_kinds_per_block`)."""
    return {(b, name): kind for b, kinds in enumerate(var_kinds_per_block(desc, declared, reads))
            for name, kind in kinds.items()}


def var_kinds_per_block(desc, declared: list[set], reads=None) -> list[dict[str, str]]:
    """Per block, name -> data|param|grad|tmp|other, by the contract's rules: @GRAD in the name is a
    gradient; is_parameter a parameter; read before any op writes it (a feed) data, written by an op tmp.
    Two refinements for files Paddle writes: a `feed` op's output is data, and a persistable tensor read
    before it is written is a parameter (an inference model's weights are persistable but not marked
    is_parameter; they come from the parameter file, not from a feed). `reads`: per block, per op a
    record that starts (type, input names, output names, sub-blocks), the names flat (every slot's in
    slot order), when already read."""
    if reads is None:
        reads = [[(op.type, [nm for s in op.inputs for nm in s.arguments],
                   [nm for s in op.outputs for nm in s.arguments], _sub_block_idxs(op))
                  for op in blk.ops] for blk in desc.blocks]
    return kinds_from_meetings(desc, first_meetings(desc, declared, reads))


def first_meetings(desc, declared: list[set], reads) -> list[dict[str, str]]:
    """Per block, name -> how a run first meets the variable: "read", "fed" (a `feed` op's output) or
    "written", in execution order (an op's inputs, the blocks it runs, its outputs)."""
    # per block, name -> how the run first meets it (a dict per block: no (block, name) key per use)
    first: list[dict[str, str]] = [{} for _ in desc.blocks]
    one_block = len(reads) == 1

    def meet(b: int, names, what: str) -> None:
        here, fb = declared[b], first[b]
        for name in names:
            if name in fb:
                continue
            if name in here:
                fb[name] = what
            elif not one_block:
                d = _declaring_block(desc, declared, b, name)
                if d is not None:
                    first[d].setdefault(name, what)

    if one_block:  # no sub-block to walk into: program order is execution order
        for rec in reads[0]:
            meet(0, rec[1], "read")
            meet(0, rec[2], "fed" if rec[0] == "feed" else "written")
    else:
        for b, i, phase in _walk_records(reads):
            rec = reads[b][i]
            if phase == "in":
                meet(b, rec[1], "read")
            else:
                meet(b, rec[2], "fed" if rec[0] == "feed" else "written")
    return first


def kinds_from_meetings(desc, first: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rules of var_kinds_per_block, given how a run first meets each variable (first_meetings)."""
    out = []
    tensor_types = dtypes.TENSOR_TYPES
    for b, block in enumerate(desc.blocks):
        fb = first[b]
        kinds: dict[str, str] = {}
        for v in block.vars:
            name = v.name
            how = fb.get(name)
            tensor = v.type.type in tensor_types
            if "@GRAD" in name:
                kind = "grad"
            elif v.is_parameter or (tensor and how == "read" and v.persistable):
                kind = "param"
            elif not tensor:
                kind = "other"  # step scopes, feed/fetch lists, readers
            elif how == "read" or how == "fed":
                kind = "data"
            elif how == "written":
                kind = "tmp"
            else:
                kind = "other"
            kinds[name] = kind
        out.append(kinds)
    return out


# ---------------------------------------------------------------------------------------------------------
# JSON values
_A_BLOCK, _A_BLOCKS = attrlib.T_BLOCK, attrlib.T_BLOCKS


_COMMENTS: dict[str, str] = {}


def op_comment(op_type: str) -> str:
    c = _COMMENTS.get(op_type)
    if c is None:
        from ..ir.registry import get_op_def
        try:
            c = get_op_def(op_type).comment
        except KernelcoreError:
            c = ""
        _COMMENTS[op_type] = c
    return c


_VT_NAMES = {int(v): k for k, v in VT.Type.items()}
_VT_LOD, _VT_ARRAY, _VT_ROWS = int(VT.LOD_TENSOR), int(VT.LOD_TENSOR_ARRAY), int(VT.SELECTED_ROWS)


def var_json(b: int, v, kind: str, group) -> dict:
    t = v.type
    tt = t.type
    td = None
    if tt == _VT_LOD and t.HasField("lod_tensor"):
        td = t.lod_tensor.tensor
    elif tt == _VT_ARRAY and t.HasField("tensor_array"):
        td = t.tensor_array.tensor
    elif tt == _VT_ROWS and t.HasField("selected_rows"):
        td = t.selected_rows
    return {"id": var_id(b, v.name), "name": v.name, "type": _VT_NAMES.get(tt, str(tt)),
            "dtype": dtypes.type_name(td.data_type) if td is not None else None,
            "shape": list(td.dims) if td is not None else None,
            "persistable": bool(v.persistable), "parameter": bool(v.is_parameter), "kind": kind, "group": group}


def op_supported(op_type: str) -> bool:
    """Whether kernelcore defines `op_type` (a program holding one that it does not cannot run here)."""
    from ..ir.registry import has_op
    return has_op(op_type)


def _flat(slots) -> list[str]:
    return [nm for _slot, names in slots for nm in names]


def read_op(op):
    """One pass over an OpDesc: (type, role attr or None, namescope, inputs, outputs, role_var, attrs JSON,
    sub-block indices, callsite)."""
    attrs = {}
    role = ns = None
    role_var: list = []
    subs: list = []
    site = None
    role_seen: set = set()
    for a in op.attrs:
        name = a.name
        t = a.type
        if name == "op_callstack":
            site = hierarchy.callsite(a.strings)
            continue
        if t == _A_BLOCK:
            subs.append(a.block_idx)
        elif t == _A_BLOCKS:
            subs.extend(a.blocks_idx)
        try:
            value = json_value(a)
        except (TypeError, ValueError) as e:
            value = f"<unreadable: {e}>"
        attrs[name] = value
        # the role attributes: the first copy of each (Paddle writes each once; what it does write twice,
        # e.g. reshape2's mkldnn_data_type, is shown as its last copy, as Paddle's attribute map keeps it)
        if name in role_seen:
            continue
        if name == "op_role":
            role_seen.add(name)
            role = value if isinstance(value, int) else None
        elif name == "op_namescope":
            role_seen.add(name)
            ns = value if isinstance(value, str) else None
        elif name == "op_role_var":
            role_seen.add(name)
            # names (a list of another type names nothing)
            role_var = value if isinstance(value, list) and all(isinstance(x, str) for x in value) else []
    ins = [(s.parameter, list(s.arguments)) for s in op.inputs]
    outs = [(s.parameter, list(s.arguments)) for s in op.outputs]
    return op.type, role, ns, ins, outs, role_var, attrs, subs, site


def program_json(program, pruned=None, dot: bool | None = None) -> dict:
    """The ProgramJSON of the contract for `program`. With `pruned` (the PruneResult of
    `kc.prune(program, ...)`), "pruned" names the ops and variables of `program` that pruning removed
    and maps the pruned program's op ids to the originals'. `dot`: whether to write the DOT source
    (default: only for programs of at most SVG_NODE_LIMIT nodes; the browser builds its own)."""
    desc = program.desc
    declared = [{v.name for v in b.vars} for b in desc.blocks]
    reads = [[read_op(op) for op in block.ops] for block in desc.blocks]
    # what the kinds and the hierarchy read of each op (hierarchy.block_groups: the names flat)
    recs = [[(r[0], _flat(r[3]), _flat(r[4]), r[7], r[1], r[2], r[5],
              [nm for slot, names in r[3] if slot == "Param" for nm in names] or None) for r in read] for read in reads]
    kinds = _var_kinds(desc, declared, recs)
    blocks = []
    nodes = 0
    for b, block in enumerate(desc.blocks):
        read = reads[b]
        params = {v.name for v in block.vars if kinds[(b, v.name)] == "param"}
        b_parent = block.parent_idx
        while b_parent >= 0 and b_parent < len(desc.blocks):  # parameters seen from a sub-block
            params.update(n for n in declared[b_parent] if kinds.get((b_parent, n)) == "param")
            b_parent = desc.blocks[b_parent].parent_idx if b_parent > 0 else -1
        roles = [hierarchy.role_name(r[1], r[0], OPTIMIZE_OPS) for r in read]
        groups, inner, fwd = hierarchy.block_groups(b, recs[b], roles, params)
        ops_json = []
        first_op: dict[str, int] = {}
        for i, (typ, _role, _ns, ins, outs, _rv, attrs, subs, site) in enumerate(read):
            o = {"id": op_id(b, i), "idx": i, "type": typ, "role": roles[i],
                 "inputs": dict(ins), "outputs": dict(outs), "attrs": attrs, "sub_blocks": subs,
                 "comment": op_comment(typ), "unsupported": not op_supported(typ), "group": inner[i]}
            if fwd[i] is not None:
                o["forward"] = op_id(b, fwd[i])
            if site is not None:
                o["callsite"] = site
            ops_json.append(o)
            for _s, names in ins:
                for nm in names:
                    first_op.setdefault(nm, i)
            for _s, names in outs:
                for nm in names:
                    first_op.setdefault(nm, i)
        vars_json = []
        for v in block.vars:
            kind = kinds[(b, v.name)]
            i = first_op.get(v.name)
            vars_json.append(var_json(b, v, kind, inner[i] if i is not None and kind != "data" else None))
        nodes += len(ops_json) + len(vars_json)
        blocks.append({"idx": b, "parent": block.parent_idx, "vars": vars_json, "ops": ops_json,
                       "groups": groups})
    pruned_json = None
    removed_ops: set[str] = set()
    removed_vars: set[str] = set()
    if pruned is not None:
        to_json = getattr(pruned, "to_json", None)  # a PruneResult (kernelcore.transforms.prune) gives its plain form
        pruned_json = to_json() if callable(to_json) else pruned
        if not (isinstance(pruned_json, dict) and {"removed_ops", "removed_vars", "kept_map"} <= set(pruned_json)):
            raise TypeError(f"pruned= takes the PruneResult of kc.prune (or its to_json()), got "
                            f"{type(pruned).__name__}")
        removed_ops, removed_vars = set(pruned_json["removed_ops"]), set(pruned_json["removed_vars"])
    if dot is None:
        dot = nodes <= SVG_NODE_LIMIT
    return {"schema": SCHEMA, "version": VERSION, "blocks": blocks, "pruned": pruned_json,
            "dot": program_dot(blocks, removed_ops, removed_vars) if dot else None, "lazy": None}


# ---------------------------------------------------------------------------------------------------------
# DOT
UNSUPPORTED_COLOR = "#d32f2f"
UNSUPPORTED_TEXT = "no kernel in kernelcore"


def dot_string(s: str) -> str:
    """A DOT quoted string whose Graphviz-escString value is `s` (ids, labels, attributes), with the characters
    of kernelcore.text_safety's rule (controls, bidi, invisible) shown as escapes: Graphviz copies them into
    the SVG, where most of them make the document ill-formed XML (and the rest hide or reorder text).

    Backslashes are doubled (so \\N, \\l or a final backslash mean nothing), quotes escaped, and '&' and line
    breaks written as entities, which Graphviz passes through to SVG: the SVG holds the string verbatim."""
    s = safe_text(s).replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return '"' + s.replace("\n", "&#10;") + '"'


def _node_name(s: str) -> str:
    # A node's name is not an escString: only \" is unescaped. Its name only tells nodes apart (the `id`
    # attribute, an escString, carries the id to the SVG), so safe_name's form serves: distinct ids stay
    # distinct and no control character reaches Graphviz or the <title> it writes.
    return '"' + safe_name(s).replace('"', '\\"') + '"'


def _short(s: str, n: int = 48) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


_ROLE_FILL = {"forward": "#dbe8f7", "backward": "#f7e0db", "optimize": "#e6dbf7"}
_KIND_FILL = {"data": "#d9f2d9", "param": "#fbf1c7", "grad": "#f9d9e6", "tmp": "#ffffff", "other": "#eeeeee"}


def _attr_list(attrs: dict) -> str:
    return " ".join(f"{k}={dot_string(str(v))}" for k, v in attrs.items())


def program_dot(blocks: list[dict], removed_ops=frozenset(), removed_vars=frozenset()) -> str:
    """The DOT digraph of ProgramJSON `blocks`: one node per op (box) and per variable (ellipse), named by
    their contract ids; edges var -> op for inputs and op -> var for outputs, to the variable the name
    means in the op's block (declared there or in the nearest parent); each sub-block a `cluster_<idx>`
    subgraph nested in its parent block's cluster; a dashed edge from an op to each block it runs."""
    import graphviz

    g = graphviz.Digraph("program")
    g.attr(compound="true", rankdir="TB", fontname="Helvetica", fontsize="10")
    g.attr("node", fontname="Helvetica", fontsize="10", style="filled")
    g.attr("edge", color="#666666", arrowsize="0.6")
    declared = [{v["name"] for v in b["vars"]} for b in blocks]
    runner: dict[int, tuple[int, dict]] = {}  # block -> (block, op) of the first op that runs it
    for b in blocks:
        for op in b["ops"]:
            for j in op["sub_blocks"]:
                runner.setdefault(j, (b["idx"], op))

    def declaring(b: int, name: str) -> int | None:
        while b >= 0:
            if name in declared[b]:
                return b
            b = blocks[b]["parent"]
        return None

    def node_lines(b: int) -> list[str]:
        lines = []
        for v in blocks[b]["vars"]:
            kind = v["kind"]
            attrs = {"id": v["id"], "class": f"var {kind}", "shape": "ellipse", "fillcolor": _KIND_FILL[kind]}
            if v["id"] in removed_vars:
                attrs.update({"class": f"var {kind} removed", "color": "#bbbbbb", "fontcolor": "#aaaaaa",
                              "fillcolor": "#f4f4f4", "style": "filled,dashed"})
            label = dot_string(_short(v["name"]))
            if v["shape"] is not None:
                label = label[:-1] + "\\n" + dot_string(f"{v['dtype']}{v['shape']}")[1:]
            lines.append(f"\t{_node_name(v['id'])} [label={label} {_attr_list(attrs)}]")
        for op in blocks[b]["ops"]:
            role = op["role"]
            attrs = {"id": op["id"], "class": f"op {role}", "shape": "box", "style": "rounded,filled",
                     "fillcolor": _ROLE_FILL[role]}
            if op["id"] in removed_ops:
                attrs.update({"class": f"op {role} removed", "color": "#bbbbbb", "fontcolor": "#aaaaaa",
                              "fillcolor": "#f4f4f4", "style": "rounded,filled,dashed"})
            label = dot_string(f"{_short(op['type'])} #{op['idx']}")
            if op.get("unsupported"):  # no kernel in kernelcore: a red dashed border and a second line
                attrs.update({"class": attrs["class"] + " unsupported", "color": UNSUPPORTED_COLOR,
                              "penwidth": "2", "style": attrs["style"] + ",dashed"})
                label = label[:-1] + "\\n" + dot_string(UNSUPPORTED_TEXT)[1:]
            lines.append(f"\t{_node_name(op['id'])} [label={label} {_attr_list(attrs)}]")
        return lines

    kids = collections.defaultdict(list)  # a parent is an earlier block (structure.check_structure)
    for b in blocks[1:]:
        kids[b["parent"]].append(b["idx"])

    # The clusters are written here rather than with graphviz's subgraph(), which copies its parent's whole
    # body for every subgraph (quadratic in the block count); the text is what that wrote. Iterative, so
    # nesting depth costs no Python recursion.
    body = g.body
    body.extend(line + "\n" for line in node_lines(0))
    stack = [(k, 1, False) for k in reversed(kids.get(0, ()))]
    while stack:
        b, depth, closing = stack.pop()
        pad = "\t" * depth
        if closing:
            body.append(pad + "}\n")
            continue
        who = runner.get(b)
        what = f"block {b}" + (f": {who[1]['type']} (op #{who[1]['idx']} of block {who[0]})" if who else "")
        body.append(f"{pad}subgraph cluster_{b} {{\n")
        body.append(f"{pad}\tid={dot_string(f'cluster_{b}')} class=\"block\" label={dot_string(_short(what, 80))}"
                    f" style=\"rounded,dashed\" color=\"#888888\" fontcolor=\"#444444\"\n")
        body.extend(f"{pad}{line}\n" for line in node_lines(b))
        stack.append((b, depth, True))
        stack.extend((k, depth + 1, False) for k in reversed(kids.get(b, ())))

    for blk in blocks:
        b = blk["idx"]
        for op in blk["ops"]:
            oid = _node_name(op["id"])
            for slots, into in ((op["inputs"], True), (op["outputs"], False)):
                for names in slots.values():
                    for n in names:
                        d = declaring(b, n)
                        if d is not None:
                            vid = _node_name(var_id(d, n))
                            g.body.append(f"\t{vid} -> {oid}\n" if into else f"\t{oid} -> {vid}\n")
            for j in op["sub_blocks"]:
                if not 0 < j < len(blocks) or j == b:
                    continue
                sub = blocks[j]
                head = sub["ops"][0]["id"] if sub["ops"] else sub["vars"][0]["id"] if sub["vars"] else None
                if head is not None:
                    g.body.append(f"\t{oid} -> {_node_name(head)} [lhead={dot_string(f'cluster_{j}')} "
                                  f"style=dashed color=\"#999999\" class=\"runs\"]\n")
    return g.source


def static_svg(dot: str, timeout: float = SVG_TIMEOUT_S) -> str | None:
    """The DOT source laid out by a system `dot` binary, as an <svg> element; None without one, or when
    the layout takes longer than `timeout` seconds (a display must not stall the kernel)."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, "-Tsvg"], input=dot.encode(), capture_output=True, timeout=timeout)
    except (subprocess.TimeoutExpired, OSError):
        return None
    if r.returncode != 0:
        return None
    svg = r.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else None


# ---------------------------------------------------------------------------------------------------------
# MIME bundles
def program_text_head(program, limit: int = TEXT_LINE_LIMIT) -> str:
    """The program's text form (str(program)), cut after `limit` lines with a line saying how much was
    left out: a big program's full text costs more to build and send than the graph itself."""
    desc = program.desc
    total = sum(1 + len(b.vars) + len(b.ops) for b in desc.blocks)
    if total <= limit:
        return str(program)
    lines = []
    for b in desc.blocks:
        if len(lines) >= limit:
            break
        block = program.block(b.idx)
        lines.append(f"block {b.idx} (parent {b.parent_idx}):")
        room = max(0, limit - len(lines))
        # the first names in order, without a view per variable of the block (a 50k-op program has 64k)
        for name in heapq.nsmallest(room, (v.name for v in b.vars)) if room else ():
            lines.append(f"  var {block.var(name)}")
        for i in range(min(len(b.ops), max(0, limit - len(lines)))):
            lines.append(f"  op #{i} {block.op(i)}")
    return "\n".join(lines) + f"\n\u2026 {total - len(lines)} more lines (print(program) shows them all)"


def program_mimebundle(program) -> dict:
    """The program as a Jupyter MIME bundle: the ProgramJSON for the kernelcore renderer, and text and
    HTML (an escaped <pre>, plus a static SVG where a system `dot` exists) for other front ends; the text
    is cut after TEXT_LINE_LIMIT lines."""
    pj = program_json(program)
    text = program_text_head(program)
    body = f'<pre class="kernelcore-program">{html.escape(text)}</pre>'
    nodes = sum(len(b["ops"]) + len(b["vars"]) for b in pj["blocks"])
    if nodes <= SVG_NODE_LIMIT:
        svg = static_svg(pj["dot"])
        if svg is not None:
            body += f'<div class="kernelcore-program-svg">{svg}</div>'
    return {PROGRAM_MIME: pj, "text/plain": text, "text/html": body}


def trace_mimebundle(data: dict, summary: str, op_times: dict, text: str) -> dict:
    """A trace's MIME bundle from plain data: its JSON (Trace.to_json, events possibly cut), its summary
    line, {op type: (runs, ns)} and its text form."""
    rows = "".join(f"<tr><td>{html.escape(safe_name(t))}</td><td>{n}</td><td>{ns / 1e3:.1f}</td></tr>"
                   for t, (n, ns) in sorted(op_times.items(), key=lambda kv: -kv[1][1]))
    body = (f'<div class="kernelcore-trace"><pre>{html.escape(summary)}</pre>'
            + (f"<table><tr><th>op type</th><th>runs</th><th>µs</th></tr>{rows}</table>" if rows else "")
            + "</div>")
    return {TRACE_MIME: data, "text/plain": text, "text/html": body}
