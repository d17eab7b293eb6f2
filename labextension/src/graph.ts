/**
 * A ProgramJSON as a graph: one node per op and per variable, a cluster per sub-block, groups for very
 * large blocks, and the DOT text Graphviz lays out. The DOT names are synthetic (n0, n1, ... and
 * cluster_*), so no name from the program reaches an id; names reach DOT only inside escaped,
 * double-quoted labels (never HTML-like labels).
 */
import { BlockJSON, OpJSON, ProgramJSON, ROLES, VAR_KINDS, VarJSON } from './schema';

/** "Expand all" opens groups, outermost first, while the drawing stays within this many nodes. */
export const EXPAND_BUDGET = 800;
/**
 * A click does not open a group when the drawing would then hold more than this many nodes: measured
 * (bench/browser_svg_size.py, docs/benchmarks.md), the page's longest task for an SVG drawing stays under
 * 200 ms up to ~2,200 nodes (159-176 ms) and passes it at ~2,900 (215-232 ms).
 */
export const DRAW_LIMIT = 2000;

/** A block with more than this many ops+vars is split into groups. */
export const GROUP_THRESHOLD = 300;
/** At most this many ops per group. */
export const GROUP_SIZE = 100;
/** A group is cut where a run of at least this many ops of one role starts. */
export const GROUP_MIN = 20;
/** Above this many nodes in the DOT, toDot bounds Graphviz's network-simplex passes. */
export const NSLIMIT_ABOVE = 400;

/** A cluster with more than this many nodes starts collapsed. */
export const COLLAPSE_THRESHOLD = 300;
const LABEL_MAX = 36;

export interface GNode {
  key: string; // DOT name
  id: string; // program id: o<b>:<i> or v<b>:<name>
  kind: 'op' | 'var';
  block: number;
  name: string; // op type or var name (search text)
  label: string[]; // lines
  classes: string[];
  container: string | null; // the cluster/group id it sits in directly (null: top level)
  op?: OpJSON;
  v?: VarJSON;
  implicit?: boolean; // a name no block declares
}

export interface GCluster {
  id: string; // cluster_<b> or group_<b>_<k>
  key: string; // DOT subgraph name (starts with "cluster")
  kind: 'block' | 'group';
  block: number;
  label: string;
  parent: string | null;
  nodes: string[]; // node keys directly inside
  kids: string[]; // cluster ids directly inside
  total: number; // nodes inside, recursively
  owner?: string; // the op id that runs this block
  opCount: number;
  /** version 2 groups: stage | layer | repeat | range (from the ProgramJSON); absent for index runs */
  gkind?: string;
  count?: number; // repeat: how many alike siblings
  /** false: a lazy program's group whose ops and vars were not fetched yet (`nodes` is then empty) */
  loaded: boolean;
  /** ops + vars directly inside, fetched or not */
  direct: number;
  /** groups directly inside, known or not (a lazy program's unfetched group knows no kids yet) */
  kidsCount: number;
}

export interface GEdge {
  from: string; // node key (or, kind "gdata", a cluster id)
  to: string; // node key, or a cluster id for kinds "sub" and "gdata"
  /** gdata: a data edge of a lazy program with an end in a group not fetched yet (drawn to its folded node) */
  kind: 'data' | 'sub' | 'gdata';
  n?: number; // gdata: how many var-op edges it stands for
}

/** A user string fit for a one-line label: control characters to spaces, cut to `max`. */
export function labelText(s: unknown, max = LABEL_MAX): string {
  const t = String(s ?? '').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ');
  return t.length > max ? t.slice(0, max - 1) + '\u2026' : t;
}

/** Ops whose type kernelcore does not define (ProgramJSON `unsupported`): class, colour and the words shown. */
export const UNSUPPORTED_CLASS = 'jp-Kernelcore-unsupported';
export const UNSUPPORTED_COLOR = '#d32f2f';
export const UNSUPPORTED_TEXT = 'no kernel in kernelcore';

/**
 * A DOT double-quoted string: backslashes and quotes escaped, `&` written as `&amp;` (Graphviz passes
 * entities like `&lt;` through to the SVG, so a bare `&` could change what is shown), lines joined
 * with \n.
 */
export function dotQuote(lines: string | string[]): string {
  const arr = Array.isArray(lines) ? lines : [lines];
  const esc = arr.map(l =>
    labelText(l, 10000)
      .replace(/\\/g, '\\\\')
      .replace(/"/g, '\\"')
      .replace(/&/g, '&amp;')
  );
  return `"${esc.join('\\n')}"`;
}

function safeRole(op: OpJSON): string {
  const r = op.role as string | undefined;
  if (r && (ROLES as readonly string[]).includes(r)) {
    return r;
  }
  return /_grad$/.test(op.type) ? 'backward' : 'forward';
}

function safeKind(v: VarJSON): string {
  const k = v.kind as string | undefined;
  return k && (VAR_KINDS as readonly string[]).includes(k) ? k : 'other';
}

function shapeText(v: VarJSON): string {
  const parts: string[] = [];
  if (v.dtype) {
    parts.push(String(v.dtype));
  }
  if (Array.isArray(v.shape)) {
    parts.push(`[${v.shape.join(', ')}]`);
  }
  return parts.join(' ');
}

export class ProgramGraphModel {
  readonly nodes = new Map<string, GNode>();
  readonly byId = new Map<string, string>(); // program id -> node key
  readonly clusters = new Map<string, GCluster>();
  readonly edges: GEdge[] = [];
  readonly topNodes: string[] = [];
  readonly topClusters: string[] = [];
  readonly blocks = new Map<number, BlockJSON>();
  /** block -> name -> var node key (declared vars) */
  private _declared = new Map<number, Map<string, string>>();
  /** lazy: sub-block ops' edges to variables of an enclosing block not fetched, placed once groups are known */
  private _chainRefs: { chain: string[]; op: string; dir: 'in' | 'out' }[] = [];
  private _n = 0;
  private _nGroups = 0;
  /** true when the program carries version 2 groups (stages, layers, repeats) */
  hierarchical = false;

  constructor(readonly program: ProgramJSON) {
    for (const b of program.blocks ?? []) {
      this.blocks.set(b.idx, b);
    }
    this._build();
  }

  /** A lazy program (ProgramJSON version 3 `lazy`): only some groups' ops and vars are here. */
  get lazy(): boolean {
    return !!this.program.lazy;
  }

  get opCount(): number {
    if (this.program.lazy && Number.isFinite(Number(this.program.lazy.ops))) {
      return Number(this.program.lazy.ops);
    }
    let n = 0;
    this.blocks.forEach(b => (n += (b.ops ?? []).length));
    return n;
  }

  /** Ops and vars in the whole program (a lazy one's included). */
  get totalNodes(): number {
    const lz = this.program.lazy;
    if (lz && Number.isFinite(Number(lz.ops)) && Number.isFinite(Number(lz.vars))) {
      return Number(lz.ops) + Number(lz.vars);
    }
    return this.nodes.size;
  }

  /** Groups open and in view with `collapsed` folded whose contents are not here yet, by block. */
  unloadedOpen(collapsed: Set<string>): Map<number, string[]> {
    const out = new Map<number, string[]>();
    const todo = [...this.topClusters];
    while (todo.length) {
      const c = this.clusters.get(todo.pop()!)!;
      if (collapsed.has(c.id)) {
        continue;
      }
      if (!c.loaded) {
        const list = out.get(c.block) ?? [];
        list.push(c.id);
        out.set(c.block, list);
      }
      todo.push(...c.kids);
    }
    return out;
  }

  /** The var node key for `name` seen from block `b`: declared there or in an ancestor. */
  resolveVar(b: number, name: string): string | undefined {
    let cur: number | undefined = b;
    const seen = new Set<number>();
    while (cur !== undefined && cur >= 0 && !seen.has(cur)) {
      seen.add(cur);
      const key = this._declared.get(cur)?.get(name);
      if (key) {
        return key;
      }
      cur = this.blocks.get(cur)?.parent;
    }
    return undefined;
  }

  private _newKey(): string {
    return `n${this._n++}`;
  }

  private _addNode(n: Omit<GNode, 'key'>): GNode {
    const node: GNode = { ...n, key: this._newKey() };
    this.nodes.set(node.key, node);
    if (!this.byId.has(node.id)) {
      this.byId.set(node.id, node.key);
    }
    return node;
  }

  private _build(): void {
    const blocks = [...this.blocks.values()].sort((a, b) => a.idx - b.idx);
    // Owners of sub-blocks: the first op that names the block.
    const owner = new Map<number, OpJSON>();
    for (const b of blocks) {
      for (const op of b.ops ?? []) {
        for (const sb of op.sub_blocks ?? []) {
          if (!owner.has(sb) && sb !== b.idx) {
            owner.set(sb, op);
          }
        }
      }
    }
    // Declared vars and ops, per block.
    for (const b of blocks) {
      const decl = new Map<string, string>();
      this._declared.set(b.idx, decl);
      for (const v of b.vars ?? []) {
        const kind = safeKind(v);
        const classes = ['jp-Kernelcore-node', 'jp-Kernelcore-var', `jp-Kernelcore-kind-${kind}`];
        if (v.persistable) {
          classes.push('jp-Kernelcore-persistable');
        }
        const st = shapeText(v);
        const node = this._addNode({
          id: String(v.id ?? `v${b.idx}:${v.name}`),
          kind: 'var',
          block: b.idx,
          name: String(v.name),
          label: st ? [labelText(v.name), labelText(st)] : [labelText(v.name)],
          classes,
          container: null,
          v
        });
        decl.set(String(v.name), node.key);
      }
    }
    const blockNodes = new Map<number, { ops: GNode[]; vars: GNode[] }>();
    for (const b of blocks) {
      const entry = { ops: [] as GNode[], vars: [] as GNode[] };
      blockNodes.set(b.idx, entry);
      this._declared.get(b.idx)!.forEach(key => entry.vars.push(this.nodes.get(key)!));
    }
    for (const b of blocks) {
      const entry = blockNodes.get(b.idx)!;
      (b.ops ?? []).forEach((op, i) => {
        const role = safeRole(op);
        const unsupported = op.unsupported === true;
        const node = this._addNode({
          id: String(op.id ?? `o${b.idx}:${op.idx ?? i}`),
          kind: 'op',
          block: b.idx,
          name: String(op.type),
          label: unsupported ? [labelText(op.type), UNSUPPORTED_TEXT] : [labelText(op.type)],
          classes: ['jp-Kernelcore-node', 'jp-Kernelcore-op', `jp-Kernelcore-role-${role}`].concat(
            unsupported ? [UNSUPPORTED_CLASS] : []
          ),
          container: null,
          op
        });
        entry.ops.push(node);
        const link = (names: Record<string, string[]> | undefined, dir: 'in' | 'out') => {
          for (const list of Object.values(names ?? {})) {
            for (const raw of Array.isArray(list) ? list : []) {
              const name = String(raw);
              let vk = this.resolveVar(b.idx, name);
              const ref = vk ? undefined : b.refs?.[name];
              if (!vk && typeof ref === 'string') {
                // a lazy program's variable not fetched yet: the edge goes to its group's folded node
                this.edges.push(dir === 'in' ? { from: ref, to: node.key, kind: 'gdata', n: 1 } : { from: node.key, to: ref, kind: 'gdata', n: 1 });
                continue;
              }
              if (!vk && Array.isArray(ref)) {
                // the same for a variable of an enclosing block, once its groups are known (_lazyEdges)
                this._chainRefs.push({ chain: ref.map(String), op: node.key, dir });
                continue;
              }
              if (!vk) {
                const imp = this._addNode({
                  id: `v${b.idx}:${name}`,
                  kind: 'var',
                  block: b.idx,
                  name,
                  label: [labelText(name)],
                  classes: ['jp-Kernelcore-node', 'jp-Kernelcore-var', 'jp-Kernelcore-kind-other', 'jp-Kernelcore-undeclared'],
                  container: null,
                  implicit: true
                });
                this._declared.get(b.idx)!.set(name, imp.key);
                entry.vars.push(imp);
                vk = imp.key;
              }
              this.edges.push(dir === 'in' ? { from: vk, to: node.key, kind: 'data' } : { from: node.key, to: vk, kind: 'data' });
            }
          }
        };
        link(op.inputs, 'in');
        link(op.outputs, 'out');
      });
    }
    // Containers: a cluster per block > 0, groups inside big blocks.
    const blockContainer = (idx: number): string | null => (idx === 0 || !this.blocks.has(idx) ? null : `cluster_${idx}`);
    const opContainer = new Map<string, string | null>(); // op node key -> container
    for (const b of blocks) {
      const cid = blockContainer(b.idx);
      if (cid) {
        const own = owner.get(b.idx);
        this.clusters.set(cid, {
          id: cid,
          key: `cluster_${b.idx}`,
          kind: 'block',
          block: b.idx,
          label: own ? `block ${b.idx} \u00b7 ${labelText(own.type, 24)}` : `block ${b.idx}`,
          parent: null,
          nodes: [],
          kids: [],
          total: 0,
          owner: own ? String(own.id) : undefined,
          opCount: (b.ops ?? []).length,
          loaded: true,
          direct: 0,
          kidsCount: 0
        });
      }
    }
    for (const b of blocks) {
      const entry = blockNodes.get(b.idx)!;
      const base = blockContainer(b.idx);
      if (Array.isArray(b.groups)) {
        this.hierarchical = true;
        this._groupsFromJSON(b, base, entry);
        entry.ops.forEach(n => opContainer.set(n.key, n.container));
        continue;
      }
      const big = entry.ops.length + entry.vars.length > GROUP_THRESHOLD;
      if (!big) {
        entry.ops.forEach(n => (n.container = base));
        entry.vars.forEach(n => (n.container = base));
      } else {
        // Runs of consecutive ops, at most GROUP_SIZE each, also cut where a run of GROUP_MIN or more
        // ops of one role starts (forward -> backward -> optimize), so interleaved roles make no tiny groups.
        const opRoles = entry.ops.map(n => safeRole(n.op!));
        const cuts = new Set<number>();
        for (let i = 1, start = 0; i <= opRoles.length; i++) {
          if (i === opRoles.length || opRoles[i] !== opRoles[start]) {
            if (start > 0 && i - start >= GROUP_MIN) {
              cuts.add(start);
            }
            start = i;
          }
        }
        let k = 0;
        let cur: GCluster | null = null;
        let roles: string[] = [];
        entry.ops.forEach((n, i) => {
          const role = opRoles[i];
          if (!cur || cur.opCount >= GROUP_SIZE || cuts.has(i)) {
            const gid = `group_${b.idx}_${k}`;
            cur = {
              id: gid,
              key: `cluster_g${b.idx}_${k}`,
              kind: 'group',
              block: b.idx,
              label: '',
              parent: base,
              nodes: [],
              kids: [],
              total: 0,
              opCount: 0,
              loaded: true,
              direct: 0,
              kidsCount: 0
            };
            (cur as GCluster & { first?: number }).first = i;
            this.clusters.set(gid, cur);
            k++;
            roles = [];
          }
          if (!roles.includes(role)) {
            roles.push(role);
          }
          const c = cur as GCluster & { first?: number; last?: number };
          c.opCount++;
          c.last = i;
          c.label = `block ${b.idx} ops ${c.first}\u2013${c.last} (${roles.join(', ')})`;
          n.container = c.id;
        });
        // A var sits with its first writer, else its first reader, else at block level.
        const writer = new Map<string, string>();
        const reader = new Map<string, string>();
        for (const e of this.edges) {
          const from = this.nodes.get(e.from);
          const to = this.nodes.get(e.to);
          if (from?.kind === 'op' && from.block === b.idx && to && !writer.has(to.key)) {
            writer.set(to.key, from.container ?? '');
          }
          if (to?.kind === 'op' && to.block === b.idx && from && !reader.has(from.key)) {
            reader.set(from.key, to.container ?? '');
          }
        }
        entry.vars.forEach(n => {
          const c = writer.get(n.key) ?? reader.get(n.key);
          n.container = c ? c : base;
        });
      }
      entry.ops.forEach(n => opContainer.set(n.key, n.container));
    }
    // Parents of block clusters: the container of their owner op, else the parent block's cluster.
    this.clusters.forEach(c => {
      if (c.kind !== 'block') {
        return;
      }
      const ownKey = c.owner ? this.byId.get(c.owner) : undefined;
      if (ownKey) {
        c.parent = opContainer.get(ownKey) ?? null;
      } else {
        const parentBlock = this.blocks.get(c.block)?.parent ?? -1;
        c.parent = blockContainer(parentBlock);
      }
      if (c.parent === c.id) {
        c.parent = null;
      }
    });
    // Break cycles (malformed parents) by hoisting to the top.
    this.clusters.forEach(c => {
      const seen = new Set<string>([c.id]);
      let p = c.parent;
      while (p) {
        if (seen.has(p)) {
          c.parent = null;
          break;
        }
        seen.add(p);
        p = this.clusters.get(p)?.parent ?? null;
      }
    });
    this.clusters.forEach(c => {
      if (c.parent && this.clusters.has(c.parent)) {
        this.clusters.get(c.parent)!.kids.push(c.id);
      } else {
        c.parent = null;
        this.topClusters.push(c.id);
      }
    });
    this.nodes.forEach(n => {
      if (n.container && this.clusters.has(n.container)) {
        this.clusters.get(n.container)!.nodes.push(n.key);
      } else {
        n.container = null;
        this.topNodes.push(n.key);
      }
    });
    const total = (id: string): number => {
      const c = this.clusters.get(id)!;
      if (c.loaded) {
        c.direct = c.nodes.length;
        c.kidsCount = c.kids.length;
      }
      c.total = c.direct + c.kids.reduce((s, k) => s + total(k), 0);
      return c.total;
    };
    this.topClusters.forEach(total);
    if (this.lazy) {
      this._lazyEdges();
    }
    // Sub-block edges: the owner op -> its block's cluster.
    this.clusters.forEach(c => {
      const ownKey = c.kind === 'block' && c.owner ? this.byId.get(c.owner) : undefined;
      if (ownKey) {
        this.edges.push({ from: ownKey, to: c.id, kind: 'sub' });
      }
    });
  }

  /** A block's version 2 groups (ProgramJSON `groups`) as clusters; ops and vars into their `group`. */
  private _groupsFromJSON(b: BlockJSON, base: string | null, entry: { ops: GNode[]; vars: GNode[] }): void {
    const mine = new Set<string>();
    for (const g of b.groups ?? []) {
      if (!g || typeof g !== 'object' || typeof g.id !== 'string' || this.clusters.has(g.id)) {
        continue;
      }
      mine.add(g.id);
      const kind = String(g.kind ?? 'layer');
      this.clusters.set(g.id, {
        id: g.id,
        key: `cluster_h${this._nGroups++}`, // the DOT name: a counter, never a string from the file
        kind: 'group',
        gkind: ['stage', 'layer', 'repeat', 'range'].includes(kind) ? kind : 'layer',
        block: b.idx,
        label: labelText(g.label, 60),
        parent: null,
        nodes: [],
        kids: [],
        total: 0,
        opCount: Number.isFinite(Number(g.ops)) ? Number(g.ops) : 0,
        count: typeof g.count === 'number' ? g.count : undefined,
        loaded: g.loaded !== false,
        direct: Number.isFinite(Number(g.nodes)) ? Number(g.nodes) : 0,
        kidsCount: Number.isFinite(Number(g.kids)) ? Number(g.kids) : 0
      });
    }
    for (const g of b.groups ?? []) {
      const c = g && typeof g.id === 'string' && mine.has(g.id) ? this.clusters.get(g.id) : undefined;
      if (c) {
        c.parent = typeof g.parent === 'string' && mine.has(g.parent) && g.parent !== g.id ? g.parent : base;
      }
    }
    const place = (gid: unknown) => (typeof gid === 'string' && mine.has(gid) ? gid : base);
    entry.ops.forEach(n => (n.container = place(n.op?.group)));
    entry.vars.forEach(n => (n.container = place(n.v?.group)));
  }

  /**
   * A lazy program's data edges with an end not fetched: from its sent variables to ops not sent
   * (`external`), and between two groups neither of which is fetched (`edges`). Edges with an end in a
   * fetched group come from that group's own ops and refs.
   */
  private _lazyEdges(): void {
    const loaded = (g: string | null) => g === null || this.clusters.get(g)?.loaded !== false;
    // a sub-block op's edge to a variable of an enclosing block not fetched: to the innermost group of the
    // chain around it that the view knows (the enclosing block's groups open without the sub-block's refs
    // being sent again, so the chain, not one group, says where the edge goes as they do)
    for (const { chain, op, dir } of this._chainRefs) {
      const g = [...chain].reverse().find(id => this.clusters.has(id));
      if (g !== undefined) {
        this.edges.push(dir === 'in' ? { from: g, to: op, kind: 'gdata', n: 1 } : { from: op, to: g, kind: 'gdata', n: 1 });
      }
    }
    this.blocks.forEach(b => {
      for (const e of b.external ?? []) {
        if (!Array.isArray(e) || loaded(e[1] as string | null) || !this.clusters.has(String(e[1]))) {
          continue;
        }
        const vk = this.byId.get(String(e[0]));
        if (!vk) {
          continue;
        }
        const n = Number(e[3]) || 1;
        this.edges.push(e[2] === 'in' ? { from: vk, to: String(e[1]), kind: 'gdata', n } : { from: String(e[1]), to: vk, kind: 'gdata', n });
      }
      for (const e of b.edges ?? []) {
        if (!Array.isArray(e) || loaded(e[0]) || loaded(e[1]) || !this.clusters.has(e[0]) || !this.clusters.has(e[1])) {
          continue;
        }
        this.edges.push({ from: e[0], to: e[1], kind: 'gdata', n: Number(e[2]) || 1 });
      }
    });
  }

  /**
   * Clusters that start collapsed: none in a program of at most COLLAPSE_THRESHOLD nodes; else every group
   * but the stages (forward / backward / optimize stay open: their direct content is bounded by the
   * hierarchy), and every cluster of more than COLLAPSE_THRESHOLD nodes.
   */
  defaultCollapsed(): string[] {
    const out: string[] = [];
    if (this.hierarchical && this.totalNodes <= COLLAPSE_THRESHOLD) {
      return out; // a small program is drawn whole
    }
    this.clusters.forEach(c => {
      if (c.gkind ? c.gkind !== 'stage' : c.kind === 'group' || c.total > COLLAPSE_THRESHOLD) {
        out.push(c.id);
      }
    });
    return out;
  }

  /**
   * What "Fold all" folds: every group and sub-block but the stages, whatever the program's size (unlike
   * defaultCollapsed, which draws a small program whole). A stage's direct content is bounded by its groups.
   */
  foldAllCollapsed(): string[] {
    return [...this.clusters.values()].filter(c => c.gkind !== 'stage').map(c => c.id);
  }

  /** How many nodes the drawing holds once cluster `id` (folded in `collapsed`) is opened. */
  countIfOpened(collapsed: Set<string>, id: string): number {
    const open = new Set(collapsed);
    open.delete(id);
    const c = this.clusters.get(id);
    // a group not fetched yet: its kids are not known, but how many there are is (each drawn folded)
    return this.visibleCount(open) + (c && !c.loaded ? c.kidsCount : 0);
  }

  visibleCount(collapsed: Set<string>): number {
    let n = this.topNodes.length;
    const todo = [...this.topClusters];
    while (todo.length) {
      const c = this.clusters.get(todo.pop()!)!;
      if (collapsed.has(c.id)) {
        n++;
        continue;
      }
      n += c.loaded ? c.nodes.length : c.direct;
      todo.push(...c.kids);
    }
    return n;
  }

  /**
   * One step of "expand all" within `budget` nodes: open folded clusters that are in view, outermost
   * first (breadth-first), each only while the drawing stays within the budget. Returns the new folded
   * set, how many were opened, and how many folded clusters remain in view.
   */
  expandWithin(collapsed: Set<string>, budget = EXPAND_BUDGET): { collapsed: Set<string>; opened: number; left: number; count: number } {
    const next = new Set(collapsed);
    let count = this.visibleCount(next);
    let opened = 0;
    let frontier = this._foldedInView(next);
    let left = 0;
    while (frontier.length) {
      const later: string[] = [];
      for (const id of frontier) {
        const c = this.clusters.get(id)!;
        // (an unfetched group's kids are not known yet: "expand all" opens them in a later round)
        const grow = c.loaded ? c.nodes.length + c.kids.length - 1 : c.direct + c.kidsCount - 1;
        if (count + grow <= budget) {
          next.delete(id);
          count += grow;
          opened++;
          c.kids.forEach(k => {
            if (next.has(k)) {
              later.push(k);
            } else {
              // an open kid inside: its folded descendants come into view too
              later.push(...this._foldedUnder(k, next));
            }
          });
        } else {
          left++;
        }
      }
      frontier = later;
    }
    left = this._foldedInView(next).length;
    return { collapsed: next, opened, left, count };
  }

  private _foldedInView(collapsed: Set<string>): string[] {
    const out: string[] = [];
    this.topClusters.forEach(id => out.push(...this._foldedUnder(id, collapsed)));
    return out;
  }

  /** Folded clusters at `id` or below it with nothing folded in between (those one click opens). */
  private _foldedUnder(id: string, collapsed: Set<string>): string[] {
    const out: string[] = [];
    const todo = [id];
    while (todo.length) {
      const c = todo.shift()!;
      if (collapsed.has(c)) {
        out.push(c);
      } else {
        todo.push(...(this.clusters.get(c)?.kids ?? []));
      }
    }
    return out;
  }

  /** The labels of the clusters around a node (by program id) or a cluster, outermost first. */
  pathOf(id: string): Array<{ id: string; label: string }> {
    const key = this.byId.get(id);
    const start = key ? this.nodes.get(key)?.container ?? null : this.clusters.has(id) ? id : null;
    return this.ancestors(start)
      .reverse()
      .map(cid => ({ id: cid, label: this.clusters.get(cid)!.label }));
  }

  /** The chain of cluster ids around a node or cluster, innermost first. */
  ancestors(container: string | null): string[] {
    const out: string[] = [];
    let c = container;
    while (c) {
      out.push(c);
      c = this.clusters.get(c)?.parent ?? null;
    }
    return out;
  }

  /** The outermost collapsed cluster around `container` (itself included), or null. */
  collapsedAround(container: string | null, collapsed: Set<string>): string | null {
    let hit: string | null = null;
    for (const c of this.ancestors(container)) {
      if (collapsed.has(c)) {
        hit = c;
      }
    }
    return hit;
  }

  /** What stands for a node when `collapsed` are folded: its own key, or a collapsed cluster's id. */
  visibleFor(nodeKey: string, collapsed: Set<string>): string {
    const n = this.nodes.get(nodeKey)!;
    return this.collapsedAround(n.container, collapsed) ?? nodeKey;
  }

  /** DOT names of the elements: nodes keep their key, a collapsed cluster is node "C_<cluster key>". */
  collapsedKey(clusterId: string): string {
    return `C_${this.clusters.get(clusterId)!.key}`;
  }

  /**
   * The DOT text with `collapsed` clusters folded into single nodes. `prefix` makes the SVG ids of this
   * rendering unique in the page: node <prefix><key>, cluster <prefix><cluster key>.
   */
  toDot(collapsed: Set<string>, prefix: string): string {
    const out: string[] = [];
    out.push('digraph kernelcore {');
    out.push('  graph [rankdir=TB, compound=true, nodesep=0.25, ranksep=0.35, fontname="sans-serif", fontsize=10, bgcolor="transparent"];');
    out.push('  node [fontname="sans-serif", fontsize=10, height=0.3, margin="0.08,0.03"];');
    out.push('  edge [arrowsize=0.6];');
    let dotNodes = 0;
    const nodeLine = (n: GNode, indent: string) => {
      dotNodes++;
      const shape = n.kind === 'op' ? 'box' : n.v?.parameter || n.classes.includes('jp-Kernelcore-kind-param') ? 'cylinder' : 'ellipse';
      const styles = n.kind === 'op' ? ['rounded', 'filled'] : ['filled'];
      if (n.classes.includes('jp-Kernelcore-kind-grad')) {
        styles.push('dashed');
      }
      if (n.classes.includes('jp-Kernelcore-role-optimize')) {
        styles.push('bold');
      }
      const shapeAttr = n.classes.includes('jp-Kernelcore-role-optimize') ? 'hexagon' : shape;
      // An op kernelcore has no kernel for: a red dashed border (the stylesheet repeats it with theme colours).
      const unsupported = n.classes.includes(UNSUPPORTED_CLASS) ? `, color="${UNSUPPORTED_COLOR}", penwidth=2` : '';
      if (unsupported) {
        styles.push('dashed');
      }
      out.push(
        `${indent}${n.key} [id=${dotQuote(prefix + n.key)}, class=${dotQuote(n.classes.join(' '))}, shape=${shapeAttr}, style=${dotQuote(styles.join(','))}${unsupported}, label=${dotQuote(n.label)}];`
      );
    };
    const emitCluster = (id: string, indent: string) => {
      const c = this.clusters.get(id)!;
      if (collapsed.has(id)) {
        const what = c.kind === 'group' ? c.label : `${c.label} (${c.opCount} ops)`;
        const more = c.gkind ? `${c.opCount} op${c.opCount === 1 ? '' : 's'} \u25b8` : `${c.total} nodes \u25b8`;
        const gk = c.gkind ? ` jp-Kernelcore-gkind-${c.gkind}` : '';
        dotNodes++;
        out.push(
          `${indent}${this.collapsedKey(id)} [id=${dotQuote(prefix + this.collapsedKey(id))}, class=${dotQuote(`jp-Kernelcore-collapsed jp-Kernelcore-${c.kind}${gk}`)}, shape=${c.gkind === 'repeat' ? 'box3d' : 'box'}, style="filled,rounded", label=${dotQuote([what, more])}];`
        );
        return;
      }
      out.push(`${indent}subgraph ${c.key} {`);
      out.push(
        `${indent}  graph [id=${dotQuote(prefix + c.key)}, class=${dotQuote(`jp-Kernelcore-cluster jp-Kernelcore-${c.kind}${c.gkind ? ` jp-Kernelcore-gkind-${c.gkind}` : ''}`)}, label=${dotQuote(`${c.label} \u25be`)}, style="rounded"];`
      );
      c.nodes.forEach(k => nodeLine(this.nodes.get(k)!, indent + '  '));
      c.kids.forEach(k => emitCluster(k, indent + '  '));
      if (c.nodes.length === 0 && c.kids.length === 0) {
        out.push(`${indent}  ${c.key}_empty [label="(empty)", shape=plaintext, class="jp-Kernelcore-empty"];`);
      }
      out.push(`${indent}}`);
    };
    this.topNodes.forEach(k => nodeLine(this.nodes.get(k)!, '  '));
    this.topClusters.forEach(id => emitCluster(id, '  '));
    // Edges between what is visible, once each. An edge with a folded cluster at one end is drawn once
    // per (node or open group, folded cluster) pair and direction: the per-variable edges of an open
    // group to a folded one are one edge (ltail/lhead on the group), which keeps Graphviz's rank
    // constraints few when one group of a big graph is unfolded.
    const endpoint = (v: string): string => (this.clusters.has(v) ? this.collapsedKey(v) : v);
    // (version 1 index runs only: their open group's edges to folded ones are merged; version 2 groups are
    // bounded by the hierarchy and keep their own edges)
    const anyGroupOpen = !this.hierarchical && [...this.clusters.values()].some(c => c.kind === 'group' && !collapsed.has(c.id));
    const openGroupOf = (nodeKey: string): string | null => {
      for (const c of this.ancestors(this.nodes.get(nodeKey)?.container ?? null)) {
        if (this.clusters.get(c)?.kind === 'group') {
          return c;
        }
      }
      return null;
    };
    // what stands for each node, and the stage around each visible thing, once per container (a big
    // program has far more edges than groups)
    const foldOf = new Map<string | null, string | null>();
    const vis = (nodeKey: string): string => {
      const c = this.nodes.get(nodeKey)?.container ?? null;
      let f = foldOf.get(c);
      if (f === undefined) {
        f = this.collapsedAround(c, collapsed);
        foldOf.set(c, f);
      }
      return f ?? nodeKey;
    };
    const stageMemo = new Map<string | null, string | null>();
    const stageOf = (v: string): string | null => {
      const c = this.clusters.has(v) ? v : this.nodes.get(v)?.container ?? null;
      let st = stageMemo.get(c);
      if (st === undefined) {
        st = this._stageOf(v);
        stageMemo.set(c, st);
      }
      return st;
    };
    type Drawn = { a: string; b: string; kind: 'data' | 'sub'; attrs: string; count: number; folded: boolean };
    const drawn = new Map<string, Drawn>();
    // a gdata end that is a cluster id: the folded cluster around it (an unfetched group is always folded)
    const visG = (v: string): string | null => {
      if (!this.clusters.has(v)) {
        return vis(v);
      }
      let f = foldOf.get(v);
      if (f === undefined) {
        f = this.collapsedAround(v, collapsed);
        foldOf.set(v, f);
      }
      return f;
    };
    for (const e of this.edges) {
      const from = e.kind === 'gdata' ? visG(e.from) : vis(e.from);
      if (from === null) {
        continue;
      }
      let to: string;
      let lhead = '';
      let ltail = '';
      if (e.kind === 'gdata') {
        const t = visG(e.to);
        if (t === null) {
          continue;
        }
        to = t;
      } else if (e.kind === 'sub') {
        const hidden = this.collapsedAround(e.to, collapsed);
        if (hidden) {
          to = hidden;
        } else {
          const inner = this.firstVisibleInside(e.to, collapsed);
          if (!inner) {
            continue;
          }
          to = inner;
          lhead = `, lhead=${this.clusters.get(e.to)!.key}`;
        }
      } else {
        to = vis(e.to);
      }
      if (from === to) {
        continue;
      }
      const fromFolded = this.clusters.has(from);
      const toFolded = this.clusters.has(to);
      let a = endpoint(from);
      let b = endpoint(to);
      let sigA = a;
      let sigB = b;
      const kind: 'data' | 'sub' = e.kind === 'sub' ? 'sub' : 'data';
      const weight = e.n ?? 1;
      if (kind === 'data' && this.hierarchical) {
        // Between stages (forward -> backward, optimize -> forward...) one edge per pair of stages, from
        // the stage cluster (or its folded node), not one per variable: each would span the whole open
        // stage and Graphviz's crossing minimisation grows with them. Edges back to an earlier stage do
        // not constrain the ranks.
        const sa = stageOf(from);
        const sb = stageOf(to);
        if (sa && sb && sa !== sb) {
          const lift = (st: string): [string, string] | null => {
            if (collapsed.has(st)) {
              return [this.collapsedKey(st), ''];
            }
            const rep = this.firstVisibleInside(st, collapsed);
            return rep ? [endpoint(rep), this.clusters.get(st)!.key] : null;
          };
          const la = lift(sa);
          const lb = lift(sb);
          if (!la || !lb) {
            continue;
          }
          const sig = `S:${sa}>S:${sb}`;
          const have = drawn.get(sig);
          if (have) {
            have.count += weight;
            continue;
          }
          const back = this.topClusters.indexOf(sa) > this.topClusters.indexOf(sb);
          drawn.set(sig, {
            a: la[0],
            b: lb[0],
            kind: 'data',
            attrs: `${la[1] ? `, ltail=${la[1]}` : ''}${lb[1] ? `, lhead=${lb[1]}` : ''}${back ? ', constraint=false, style=dashed' : ''}, class="jp-Kernelcore-stageedge"`,
            count: weight,
            folded: false
          });
          continue;
        }
      }
      if (kind === 'data' && fromFolded !== toFolded && !this.hierarchical) {
        // the open end: a node, or the open group it sits in
        const openEnd = fromFolded ? to : from;
        const grp = openGroupOf(openEnd);
        const rep = grp ? this.firstVisibleInside(grp, collapsed) : null;
        if (grp && rep) {
          const key = this.clusters.get(grp)!.key;
          if (fromFolded) {
            sigB = `G:${grp}`;
            b = endpoint(rep);
            lhead = `, lhead=${key}`;
          } else {
            sigA = `G:${grp}`;
            a = endpoint(rep);
            ltail = `, ltail=${key}`;
          }
        }
      }
      const sig = `${sigA}>${sigB}>${kind}`;
      const have = drawn.get(sig);
      if (have) {
        have.count += weight;
        continue;
      }
      const style = kind === 'sub' ? `, style=dashed, class="jp-Kernelcore-subedge"` : '';
      drawn.set(sig, { a, b, kind, attrs: `${style}${ltail}${lhead}`, count: weight, folded: fromFolded && toFolded });
    }
    let n = 0;
    drawn.forEach(d => {
      n++;
      const constraint = d.folded && anyGroupOpen ? ', constraint=false' : '';
      // several variables' edges drawn as one: a thicker line
      const count = d.count > 1 ? `, penwidth=${Math.min(3, 1 + Math.log2(d.count) / 2).toFixed(2)}` : '';
      out.push(`  ${d.a} -> ${d.b} [id=${dotQuote(`${prefix}e${n}`)}${d.attrs}${constraint}${count}];`);
    });
    if (dotNodes > NSLIMIT_ABOVE) {
      // bound Graphviz's network-simplex passes on big graphs (layout time, not correctness)
      out.splice(1, 0, '  graph [nslimit=3, nslimit1=3];');
    }
    out.push('}');
    return out.join('\n');
  }

  /** The stage group (version 2) around a visible node key or cluster id, or null. */
  private _stageOf(v: string): string | null {
    let c: string | null = this.clusters.has(v) ? v : this.nodes.get(v)?.container ?? null;
    while (c) {
      const cl = this.clusters.get(c);
      if (cl?.gkind === 'stage') {
        return c;
      }
      c = cl?.parent ?? null;
    }
    return null;
  }

  /** A DOT name inside an expanded cluster to aim a compound edge at. */
  private firstVisibleInside(id: string, collapsed: Set<string>): string | null {
    const c = this.clusters.get(id)!;
    if (c.nodes.length) {
      return c.nodes[0];
    }
    for (const k of c.kids) {
      if (collapsed.has(k)) {
        return k;
      }
      const inner = this.firstVisibleInside(k, collapsed);
      if (inner) {
        return inner;
      }
    }
    return c.kids.length === 0 ? `${c.key}_empty` : null;
  }

  /** Node keys whose name or id contains `query` (case-insensitive). */
  search(query: string): string[] {
    const q = query.trim().toLowerCase();
    if (!q) {
      return [];
    }
    const out: string[] = [];
    this.nodes.forEach(n => {
      if (n.name.toLowerCase().includes(q) || n.id.toLowerCase().includes(q)) {
        out.push(n.key);
      }
    });
    return out;
  }
}
