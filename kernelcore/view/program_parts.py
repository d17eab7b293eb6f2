"""A big program's ProgramJSON in parts (contract version 3): the skeleton first, a group's ops on demand.

A program of tens of thousands of ops has a whole ProgramJSON of tens of megabytes, slow to build, send and
parse, while a person first sees a few dozen folded groups. So, as Model Explorer does, the first payload carries the
hierarchy (every group of kernelcore/view/hierarchy.py, with how many ops and variables sit directly in it),
the group-to-group edges (merged: one entry per pair of innermost groups, with a count), and the ops and
variables of what the view shows open at first (block level and the stages); the ops and variables of
any other group are sent when that group is opened (`ProgramParts.contents`), and search runs here, over
every name (`ProgramParts.search`).

What it reads of each op for the skeleton is only what the hierarchy needs (type, role, name scope,
role_var, slots); attributes, comments and callsites are read per opened group. The parts of a program
are built once per program version and cached (weakly: dropping the program drops them).

`program_mimebundle` is what a notebook shows of a Program (view/notebook.py): programs of at most
op_reads.LAZY_ABOVE ops carry everything (a saved notebook and the file viewer draw them with no kernel); bigger
ones carry the skeleton and a program id, which the front end gives back over the `kernelcore.program` comm
(registered by kernelcore_widgets; this engine module imports nothing from Jupyter) to fetch group contents.
Displayed programs are held weakly by id (`lookup`).
"""
from __future__ import annotations

import bisect
import html
import itertools
import time
import weakref

from . import display, hierarchy
from ..ir import op_reads
from ..ir.node_ids import op_id, var_id
from .display import OPTIMIZE_OPS
from .var_uses import BlockUses

SEARCH_LIMIT = 500   # search hits answered at most
# What one request may ask for. The server route and the kernel's comm both take requests from a browser,
# so the caps hold for both: a list of ids is checked before any group is looked up, and the ops and
# variables of the groups asked for are counted before their JSON is built.
MAX_GROUP_IDS = 65_536         # ids in one list (`groups` or `loaded`), repeats included
MAX_GROUP_ID_CHARS = 256       # characters of one group id (hierarchy.py's ids are a few dozen at most)
MAX_QUERY_CHARS = 1_024        # characters of a search query
MAX_CONTENTS_NODES = 50_000    # ops and variables one contents reply carries (~30 MB of JSON)

_parts: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Program -> ProgramParts
_displayed: dict[str, tuple] = {}  # program id -> (weakref to the Program, its version when shown)
_ids = itertools.count(1)


def is_big(program) -> bool:
    return sum(len(b.ops) for b in program.desc.blocks) > op_reads.LAZY_ABOVE


def parts_of(program) -> "ProgramParts":
    """The ProgramParts of `program` at its current version (built once, cached per program)."""
    have = _parts.get(program)
    version = getattr(program, "version", 0)
    if have is None or have.version != version:
        have = ProgramParts(program, version)
        _parts[program] = have
    return have


def register(program) -> str:
    """An id under which `program` (held weakly) can be found by `lookup` while it lives."""
    pid = f"p{next(_ids)}"
    version = getattr(program, "version", 0)
    _displayed[pid] = (weakref.ref(program), version)
    for k in [k for k, (ref, _v) in _displayed.items() if ref() is None]:
        del _displayed[k]
    return pid


class ProgramGone(LookupError):
    """The program an id names is no longer here (a restarted kernel, a dropped or edited program)."""


def lookup(pid: str) -> "ProgramParts":
    hit = _displayed.get(pid) if isinstance(pid, str) else None
    program = hit[0]() if hit is not None else None
    if program is None:
        raise ProgramGone(f"program {pid!r} is not in this kernel (was it restarted?); re-run the cell to open it")
    parts = parts_of(program)
    if parts.version != hit[1]:
        raise ProgramGone(f"program {pid!r} changed since it was shown; re-run the cell to open it")
    return parts


class PartsRequestError(ValueError):
    """A parts request that is malformed (`status` 400) or asks for more than a cap allows (413); the
    message names the field and, for a cap, the cap."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def group_ids(value, field: str) -> list:
    """`value` (a request's `field`) as a list of distinct group ids (strings; None is block level), in the
    order first given: a repeated id is answered once. PartsRequestError when it is no list, too long, or
    holds anything but short strings and nulls."""
    if not isinstance(value, list):
        raise PartsRequestError(f"{field} must be a list of group ids (strings, or null for block level), "
                                f"not {type(value).__name__}")
    if len(value) > MAX_GROUP_IDS:
        raise PartsRequestError(f"{field} names {len(value)} groups; a request names at most {MAX_GROUP_IDS}", 413)
    for k, g in enumerate(value):
        if g is None:
            continue
        if not isinstance(g, str):
            raise PartsRequestError(f"{field}[{k}] is a {type(g).__name__}; a group id is a string "
                                    f"(or null for block level)")
        if len(g) > MAX_GROUP_ID_CHARS:
            raise PartsRequestError(f"{field}[{k}] is {len(g)} characters long; a group id has at most "
                                    f"{MAX_GROUP_ID_CHARS}")
    return list(dict.fromkeys(value))


def _block_index(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise PartsRequestError(f"block must be an integer (a block index), not {type(value).__name__}")
    return value


def _search_query(value) -> str:
    if not isinstance(value, str):
        raise PartsRequestError(f"query must be a string, not {type(value).__name__}")
    if len(value) > MAX_QUERY_CHARS:
        raise PartsRequestError(f"query is {len(value)} characters long; a search query has at most "
                                f"{MAX_QUERY_CHARS}")
    return value


class _Block:
    __slots__ = ("recs", "roles", "groups", "inner", "fwd", "vgroup", "var_order", "ops_in", "vars_in",
                 "edges", "ext", "by_id", "stages", "var_index", "parent", "order", "kids")


class ProgramParts:
    """One program's skeleton and group contents (ProgramJSON version 3)."""

    def __init__(self, program, version: int = 0):
        # the desc, not the program: the cache maps the program (weakly) to this, which must not keep it alive
        self.desc = program.desc
        self.version = version
        t0 = time.perf_counter()
        with op_reads.no_gc(lasting=True):
            self._build(program.outline_reads())
        self.build_s = time.perf_counter() - t0  # what the outline cost (benchmarks report it)

    def _build(self, reads) -> None:
        """`reads`: the records loading kept (op_reads.py), or None to read them from the desc."""
        desc = self.desc
        many = len(desc.blocks) > 1
        var_names = [[v.name for v in b.vars] for b in desc.blocks]
        self.declared = declared = [set(names) for names in var_names]
        if reads is None:
            reads = [op_reads.read_ops(block.ops, many) for block in desc.blocks]
        uses = [BlockUses(read, names) for read, names in zip(reads, var_names)]
        if many:  # execution order walks into sub-blocks
            meetings = display.first_meetings(desc, declared, reads)
        else:     # program order is execution order
            meetings = [uses[0].first_meetings([r[0] for r in reads[0]])]
        self.kinds = kinds = display.kinds_from_meetings(desc, meetings)
        self.blocks: list[_Block] = []
        for b, block in enumerate(desc.blocks):
            read = reads[b]
            kb = kinds[b]
            params = {n for n, k in kb.items() if k == "param"}
            bp = block.parent_idx
            while 0 <= bp < len(desc.blocks):
                params.update(n for n, k in kinds[bp].items() if k == "param")
                bp = desc.blocks[bp].parent_idx if bp > 0 else -1
            roles = [hierarchy.role_name(r[4], r[0], OPTIMIZE_OPS) for r in read]
            groups, inner, fwd = hierarchy.block_groups(b, read, roles, params)
            blk = _Block()
            blk.recs, blk.roles, blk.groups, blk.inner, blk.fwd = read, roles, groups, inner, fwd
            blk.by_id = {g["id"]: g for g in groups}
            blk.parent = {g["id"]: g["parent"] for g in groups}
            blk.order = {g["id"]: k for k, g in enumerate(groups)}
            blk.kids = {}
            for g in groups:
                blk.kids.setdefault(g["parent"], []).append(g["id"])
            blk.stages = {g["id"] for g in groups if g["kind"] == "stage"}
            ops_in: dict = {}
            for i, g in enumerate(inner):
                ops_in.setdefault(g, []).append(i)
            # variables in the group of the first op that uses them (data at block level), and the edges
            # between groups the uses imply (var_uses.py)
            order = var_names[b]
            placed = uses[b].place(inner, [kb[nm] == "data" for nm in order])
            vgroup, vars_in, edges, ext = placed.vgroup, placed.vars_in, placed.edges, placed.ext
            blk.vgroup, blk.var_order, blk.ops_in, blk.vars_in = vgroup, order, ops_in, vars_in
            blk.edges, blk.ext = edges, ext
            blk.var_index = {nm: k for k, nm in enumerate(order)}
            self.blocks.append(blk)
        self.n_ops = sum(len(b.recs) for b in self.blocks)
        self.n_vars = sum(len(b.var_order) for b in self.blocks)

    # -- JSON pieces --------------------------------------------------------------------------------------
    def op_json(self, b: int, i: int) -> dict:
        """The ProgramJSON op entry of op `i` of block `b` (attributes read now)."""
        blk = self.blocks[b]
        typ, _role, _ns, ins, outs, _rv, attrs, subs, site = display.read_op(self.desc.blocks[b].ops[i])
        o = {"id": op_id(b, i), "idx": i, "type": typ, "role": blk.roles[i], "inputs": dict(ins),
             "outputs": dict(outs), "attrs": attrs, "sub_blocks": subs, "comment": display.op_comment(typ),
             "unsupported": not display.op_supported(typ), "group": blk.inner[i]}
        if blk.fwd[i] is not None:
            o["forward"] = op_id(b, blk.fwd[i])
        if site is not None:
            o["callsite"] = site
        return o

    def var_json(self, b: int, name: str) -> dict | None:
        blk = self.blocks[b]
        if name not in blk.vgroup:
            return None
        return display.var_json(b, self._var_desc(b, name), self.kinds[b][name], blk.vgroup[name])

    def _var_desc(self, b: int, name: str):
        return self.desc.blocks[b].vars[self.blocks[b].var_index[name]]

    def _group_json(self, blk, gid: str, loaded) -> dict:
        d = dict(blk.by_id[gid])
        d["nodes"] = len(blk.ops_in.get(gid, ())) + len(blk.vars_in.get(gid, ()))
        d["kids"] = len(blk.kids.get(gid, ()))
        d["loaded"] = gid in loaded
        return d

    def contents(self, b: int, group_ids, loaded=None) -> dict:
        """What the view needs to open groups `group_ids` of block `b` (None: block level), given that it
        has the contents of groups `loaded` (block level always): the ops and variables directly in
        `group_ids`; `known`, the groups it may draw (those loaded and their kids, as GroupJSON, parents
        first); and, for the new loaded set, lifted to the known groups (an unknown group is drawn as the
        known group around it): `refs` (name -> group; for a variable of an enclosing block the chain of its
        groups there, outermost first: _outer_ref) for the names loaded ops use whose variables are not
        loaded, `external` ([var id, group, "in" (the op reads it) | "out", count]) for the edges of loaded
        variables to ops not loaded, and `edges` ([writer-side group, reader-side group, count]) between
        groups neither of which is loaded. `refs`, `external` and `edges` replace what the view had."""
        if not 0 <= b < len(self.blocks):
            raise KeyError(f"the program has no block {b}")
        blk = self.blocks[b]
        gids = list(dict.fromkeys(group_ids))  # a group asked for twice is sent once
        for g in gids:
            if g is not None and g not in blk.by_id:
                raise KeyError(f"block {b} has no group {g!r}")
        L = {None, *gids}
        for g in loaded or ():
            if g is not None and g not in blk.by_id:
                raise KeyError(f"block {b} has no group {g!r}")
            L.add(g)
        # known: the loaded groups and their kids (a group opens only inside an open one, so every loaded
        # group's parent is loaded too: the known groups form a tree from the top)
        known = [g for g in L if g is not None]
        for g in L:
            known.extend(k for k in blk.kids.get(g, ()) if k not in L)
        K = set(known)
        # the loaded groups in program order (block level first): what follows is built in this order, so
        # a reply is the same in every process (a set's order follows string hashing, which varies)
        in_order = [None] + sorted((g for g in L if g is not None), key=blk.order.__getitem__)
        parent = blk.parent
        lifted: dict = {}

        def lift(g):
            hit = lifted.get(g)
            if hit is None:
                x = g
                while x is not None and x not in K:
                    x = parent[x]
                lifted[g] = hit = x
            return hit

        vdescs = self.desc.blocks[b].vars
        vindex = blk.var_index
        ops, vars_ = [], []
        for g in gids:
            for i in blk.ops_in.get(g, ()):
                ops.append(self.op_json(b, i))
            for nm in blk.vars_in.get(g, ()):
                vars_.append(display.var_json(b, vdescs[vindex[nm]], self.kinds[b][nm], blk.vgroup[nm]))
        refs: dict = {}
        vgroup = blk.vgroup
        for g in in_order:
            for i in blk.ops_in.get(g, ()):
                r = blk.recs[i]
                for names in (r[1], r[2]):
                    for nm in names:
                        if nm in vgroup:
                            if vgroup[nm] not in L:
                                refs[nm] = lift(vgroup[nm])
                        elif b > 0 and nm not in refs:
                            outer = self._outer_ref(b, nm)
                            if outer is not None:
                                refs[nm] = outer
        ext: dict = {}
        for g in in_order:
            for nm, go, into in blk.ext.get(g, ()):
                if go in L:
                    continue
                key = (nm, lift(go), into)
                ext[key] = ext.get(key, 0) + 1
        edges: dict = {}
        for (a, z), n in blk.edges.items():
            if a in L or z in L:
                continue
            la, lz = lift(a), lift(z)
            if la != lz:
                edges[(la, lz)] = edges.get((la, lz), 0) + n
        order = blk.order
        known.sort(key=order.__getitem__)
        return {"block": b, "groups": gids, "ops": ops, "vars": vars_, "refs": refs,
                "external": [[var_id(b, nm), go, "in" if into else "out", n] for (nm, go, into), n in ext.items()],
                "edges": [[a, z, n] for (a, z), n in edges.items()],
                "known": [self._group_json(blk, g, L) for g in known]}

    def _outer_ref(self, b: int, name: str):
        """For a name a sub-block's op uses that an enclosing block declares inside one of its groups: the
        chain of that block's groups around the variable, outermost first. The first is known to the view
        from the start (a group under the block level or a stage); the view draws the edge to the innermost
        one it knows, so the edge follows as groups of the enclosing block open (the sub-block's refs are
        not sent again then). None when the variable sits at block level (always sent) or nowhere."""
        a = self.desc.blocks[b].parent_idx
        while 0 <= a < len(self.blocks):
            outer = self.blocks[a]
            if name in outer.vgroup:
                g = outer.vgroup[name]
                if g is None:
                    return None
                first = {None, *outer.stages}
                chain = [g]
                while outer.parent[g] not in first:
                    g = outer.parent[g]
                    chain.append(g)
                return chain[::-1]
            a = self.desc.blocks[a].parent_idx if a > 0 else -1
        return None

    def skeleton(self, pid: str | None = None) -> dict:
        """ProgramJSON version 3 with `lazy` set: the contents of block level and of the stages, the groups
        known then (those and their kids, with `nodes`, `kids` and `loaded`), and refs / external / edges
        lifted to them (see `contents`)."""
        with op_reads.no_gc():
            blocks = []
            for b, blk in enumerate(self.blocks):
                first = [None, *sorted(blk.stages, key=lambda g: blk.by_id[g]["first"])]
                c = self.contents(b, first)
                blocks.append({"idx": b, "parent": self.desc.blocks[b].parent_idx, "vars": c["vars"],
                               "ops": c["ops"], "groups": c["known"], "refs": c["refs"],
                               "external": c["external"], "edges": c["edges"]})
            return {"schema": display.SCHEMA, "version": display.VERSION, "blocks": blocks,
                    "pruned": None, "dot": None,
                    "lazy": {"id": pid, "ops": self.n_ops, "vars": self.n_vars}}

    def search(self, query: str, limit: int = SEARCH_LIMIT) -> dict:
        """Ops (by type or id) and variables (by name or id) whose text holds `query`, case-insensitive:
        {"hits": [{id, name, block, group, path}], "total": n, "groups": {id: GroupJSON}} with at most `limit`
        hits; `path` lists the groups around a hit, outermost first, and `groups` describes them (the view may
        not know them yet: it opens them to reveal the hit)."""
        q = str(query).strip().lower()
        hits: list = []
        total = 0
        if not q:
            return {"hits": hits, "total": 0, "groups": {}}
        for b, blk in enumerate(self.blocks):
            for i, r in enumerate(blk.recs):
                oid = op_id(b, i)
                if q in r[0].lower() or q in oid.lower():
                    total += 1
                    if len(hits) < limit:
                        hits.append({"id": oid, "name": r[0], "block": b, "group": blk.inner[i]})
            for nm in blk.var_order:
                vid = var_id(b, nm)
                if q in vid.lower():
                    total += 1
                    if len(hits) < limit:
                        hits.append({"id": vid, "name": nm, "block": b, "group": blk.vgroup[nm]})
        paths: dict = {}
        for h in hits:
            blk = self.blocks[h["block"]]
            chain = []
            g = h["group"]
            while g is not None:
                chain.append(g)
                paths.setdefault(g, self._group_json(blk, g, ()))
                g = blk.parent[g]
            h["path"] = chain[::-1]
        return {"hits": hits, "total": total, "groups": paths}

    def handle(self, msg: dict) -> dict:
        """One request of the parts protocol -> its answer (the comm calls this): `answer`, with every
        error (a malformed request or one over a cap included) answered as {"error": str}."""
        try:
            return self.answer(msg)
        except PartsRequestError as e:
            return {"error": str(e)}

    def _check_contents_size(self, b: int, gids: list) -> None:
        """PartsRequestError (413) when the groups `gids` of block `b` hold more than MAX_CONTENTS_NODES ops
        and variables: counted before any JSON is built (the skeleton is not capped: it is what the view
        needs first)."""
        if not 0 <= b < len(self.blocks):
            return  # contents names the missing block
        blk = self.blocks[b]
        nodes = sum(len(blk.ops_in.get(g, ())) + len(blk.vars_in.get(g, ())) for g in gids)
        if nodes > MAX_CONTENTS_NODES:
            raise PartsRequestError(f"the {len(gids)} groups asked for hold {nodes} ops and variables; one "
                                    f"reply carries at most {MAX_CONTENTS_NODES} (open fewer groups at once)", 413)

    def answer(self, msg) -> dict:
        """One request of the parts protocol -> its answer:
        {"type": "contents", "block": int, "groups": [id|null], "loaded": [id]} -> the contents;
        {"type": "search", "query": str} -> the hits. A group or block the program lacks answers
        {"error": str}; a malformed request, or one over a cap (MAX_GROUP_IDS, MAX_GROUP_ID_CHARS,
        MAX_QUERY_CHARS, MAX_CONTENTS_NODES), raises PartsRequestError (the server answers 400 or 413)."""
        if not isinstance(msg, dict):
            raise PartsRequestError(f"a request is a JSON object, not {type(msg).__name__}")
        kind = msg.get("type")
        if kind == "contents":
            b = _block_index(msg.get("block"))
            groups = group_ids(msg.get("groups"), "groups")
            loaded = group_ids(msg.get("loaded", []), "loaded")
            self._check_contents_size(b, groups)
            try:
                with op_reads.no_gc():
                    return self.contents(b, groups, loaded)
            except KeyError as e:
                return {"error": str(e.args[0]) if e.args else "not found"}
        if kind == "search":
            return self.search(_search_query(msg.get("query", "")))
        if not isinstance(kind, (str, type(None))):
            raise PartsRequestError(f"type must be a string (contents or search), not {type(kind).__name__}")
        return {"error": f"unknown request {kind!r} (contents or search)"}


def _pruned_json(pruned):
    if pruned is None:
        return None
    to_json = getattr(pruned, "to_json", None)
    return to_json() if callable(to_json) else pruned


class PrunedParts:
    """What pruning removed from a program sent in parts, sent in the same parts: the skeleton and each
    contents answer carry the removed ids among their ops and vars and, for the groups they make known,
    "all" (every op in the group was removed) or "some", so a folded group shows what pruning did to it
    without its ops being sent (a 51,230-op program pruned to one tower removes ~49,000 ops: listed whole
    that is 2.3 MB in the first payload). `kept_map` (pruned op id -> original) goes whole with the skeleton:
    it names the pruned program's ops, which a side-by-side view has in full anyway."""

    def __init__(self, parts: "ProgramParts", pruned):
        self.parts = parts
        self.kept_map = {op_id(*new): op_id(*old) for new, old in sorted(pruned.kept.items())}
        self.removed_ops: list[set] = [set() for _ in parts.blocks]
        self.removed_vars: list[set] = [set() for _ in parts.blocks]
        for b, i in pruned.removed_ops:
            if 0 <= b < len(parts.blocks):
                self.removed_ops[b].add(i)
        for b, name in pruned.removed_vars:
            if 0 <= b < len(parts.blocks):
                self.removed_vars[b].add(name)
        self.counts = {"ops": len(pruned.removed_ops), "vars": len(pruned.removed_vars)}
        # per group: removed ops anywhere inside it (a group's ops are a contiguous run, first..last)
        self.group_state: list[dict] = []
        for b, blk in enumerate(parts.blocks):
            gone = sorted(self.removed_ops[b])
            state = {}
            for g in blk.groups:
                n = bisect.bisect_right(gone, g["last"]) - bisect.bisect_left(gone, g["first"])
                if n:
                    state[g["id"]] = "all" if n >= g["ops"] else "some"
            self.group_state.append(state)

    def json_for(self, b: int, ops, var_names, groups, whole_map: bool = False) -> dict:
        """PrunedJSON for what one payload sends of block `b`: op indices `ops`, variables `var_names`,
        groups `groups` (ids)."""
        ro, rv, gs = self.removed_ops[b], self.removed_vars[b], self.group_state[b]
        return {"removed_ops": [op_id(b, i) for i in ops if i in ro],
                "removed_vars": [var_id(b, n) for n in var_names if n in rv],
                "kept_map": self.kept_map if whole_map else {},
                "groups": {g: gs[g] for g in groups if g in gs},
                "counts": self.counts}

    def for_skeleton(self, skel: dict) -> dict:
        out = {"removed_ops": [], "removed_vars": [], "kept_map": self.kept_map, "groups": {},
               "counts": self.counts}
        for blk in skel["blocks"]:
            b = blk["idx"]
            j = self.json_for(b, [o["idx"] for o in blk["ops"]], [v["name"] for v in blk["vars"]],
                              [g["id"] for g in blk["groups"]])
            out["removed_ops"] += j["removed_ops"]
            out["removed_vars"] += j["removed_vars"]
            out["groups"].update(j["groups"])
        return out

    def for_contents(self, reply: dict) -> dict:
        return self.json_for(reply["block"], [o["idx"] for o in reply["ops"]], [v["name"] for v in reply["vars"]],
                             [g["id"] for g in reply["known"]])


def program_view_json(program, pruned=None) -> tuple[dict, "ProgramParts | None", "PrunedParts | None"]:
    """What a view of `program` is first given: the whole ProgramJSON (small programs) or the skeleton of
    its parts (lazy; the ProgramParts answers the rest, and with `pruned`, a PruneResult, the PrunedParts
    says what pruning removed from each answer: `for_contents`)."""
    if not is_big(program):
        return display.program_json(program, pruned), None, None
    parts = parts_of(program)
    skel = parts.skeleton(register(program))
    marks = PrunedParts(parts, pruned) if pruned is not None and hasattr(pruned, "kept") else None
    skel["pruned"] = marks.for_skeleton(skel) if marks is not None else _pruned_json(pruned)
    return skel, parts, marks


def program_mimebundle(program) -> dict:
    """A Program in a notebook (view/notebook.py): display.program_mimebundle, with the skeleton in place of the
    whole ProgramJSON for programs of more than op_reads.LAZY_ABOVE ops."""
    if not is_big(program):
        return display.program_mimebundle(program)
    pj, _parts_, _marks = program_view_json(program)
    text = display.program_text_head(program)
    return {display.PROGRAM_MIME: pj, "text/plain": text,
            "text/html": f'<pre class="kernelcore-program">{html.escape(text)}</pre>'}
