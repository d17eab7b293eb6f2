import { afterEach, describe, expect, it } from 'vitest';
import ProgramGraphWidget, { ProgramGraphView } from '../src/views/ProgramGraph';
import { dotQuote, ProgramGraphModel } from '../src/graph';
import { MAX_SCALE, OPEN_MIN_SCALE } from '../src/graphpane';
import { vizLayout } from '../src/vizdirect';
import { chain, HOSTILE, HOSTILE_OP, mlp, withSubBlock } from './fixtures';
import { container, FakeModel, flush, texts } from './fake-model';

function model(program: unknown, extra: Record<string, unknown> = {}) {
  return new FakeModel({ program, pruned_program: null, selected: '', details: {}, search: '', collapsed: [], ...extra });
}

/** The SVG node element drawn for program id `id`. */
function nodeOf(view: ProgramGraphView, id: string, side: 'left' | 'right' = 'left'): Element {
  const pane = side === 'left' ? view.left : view.right!;
  const el = pane.nodeEls.get(id);
  if (!el) {
    throw new Error(`no element for ${id}`);
  }
  return el;
}

function click(el: Element) {
  el.dispatchEvent(new MouseEvent('click', { bubbles: true }));
}

afterEach(() => {
  document.body.textContent = '';
});

describe('ProgramGraph (real Graphviz WASM)', () => {
  it('renders a node per op and var, classed by role and kind', async () => {
    const el = container();
    const m = model(mlp());
    const cleanup = await ProgramGraphWidget.render({ model: m, el });
    expect(el.querySelectorAll('svg g.node').length).toBe(5 + 6);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-op').length).toBe(5);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-role-backward').length).toBe(1);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-role-optimize').length).toBe(1);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-kind-param').length).toBe(1);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-kind-grad').length).toBe(1);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-kind-data').length).toBe(1);
    expect(el.querySelectorAll('g.edge').length).toBeGreaterThan(5);
    expect(texts(el)).toContain('relu');
    cleanup();
    expect(m.listenerCount()).toBe(0);
    expect(el.children.length).toBe(0);
  });

  it('sends select on click and shows details when Python sets them', async () => {
    const el = container();
    const m = model(mlp());
    const view = new ProgramGraphView(m, el);
    await view.ready;
    click(nodeOf(view, 'o0:0').querySelector('text')!);
    expect(m.sent).toEqual([{ type: 'select', id: 'o0:0' }]);
    expect(m.get('selected')).toBe('o0:0');
    expect(m.saves).toBeGreaterThan(0);
    expect(nodeOf(view, 'o0:0').classList.contains('jp-Kernelcore-selected')).toBe(true);
    // Before Python answers: what the program says.
    expect(texts(el)).toContain('Mul: Out = X * Y');
    m.pythonSets('details', { id: 'o0:0', comment: 'from python', attrs: { x_num_col_dims: 1 }, value: { shape: [2], dtype: 'float32', place: 'CPUPlace', min: 0, max: 1, mean: 0.5, std: 0.5, nan: 0, inf: 0, sample: [[0, 1]], kind: 'sparkline' } });
    expect(texts(el)).toContain('from python');
    expect(el.querySelector('.jp-Kernelcore-details canvas.jp-Kernelcore-sparkline')).not.toBeNull();
    // Details for another node are not shown against this one.
    m.pythonSets('details', { id: 'o0:1', comment: 'stale' });
    expect(texts(el)).not.toContain('stale');
    view.dispose();
  });

  it('greys pruned ids', async () => {
    const el = container();
    const p = mlp();
    p.pruned = { removed_ops: ['o0:2', 'o0:3'], removed_vars: ['v0:w@GRAD'], kept_map: { 'o0:0': 'o0:0', 'o0:1': 'o0:1' } };
    const view = new ProgramGraphView(model(p), el);
    await view.ready;
    const greyed = [...el.querySelectorAll('g.node.jp-Kernelcore-pruned')].map(g => view.left.graph!.nodes.get(g.id.replace(/^kc\d+_/, ''))!.id);
    expect(greyed.sort()).toEqual(['o0:2', 'o0:3', 'v0:w@GRAD']);
    expect(nodeOf(view, 'o0:0').classList.contains('jp-Kernelcore-pruned')).toBe(false);
    expect(el.querySelectorAll('g.edge.jp-Kernelcore-pruned').length).toBeGreaterThan(0);
    expect(texts(el).join(' ')).toContain('2 ops pruned');
    view.dispose();
  });

  it('shows hostile names as text and creates no element from them', async () => {
    const el = container();
    const m = model(mlp());
    const view = new ProgramGraphView(m, el);
    await view.ready;
    expect(el.querySelector('img')).toBeNull();
    expect(el.querySelector('script')).toBeNull();
    const all = texts(el);
    expect(all).toContain(HOSTILE);
    expect(all).toContain(HOSTILE_OP);
    for (const e of el.querySelectorAll('*')) {
      for (const a of e.attributes) {
        expect(a.name.startsWith('on')).toBe(false);
      }
    }
    view.select('o0:4');
    expect(el.querySelector('img, script')).toBeNull();
    expect(texts(el.querySelector('.jp-Kernelcore-details')!)).toContain(HOSTILE); // comment and attr, verbatim
    m.pythonSets('details', { id: 'o0:4', comment: HOSTILE, [HOSTILE]: HOSTILE_OP });
    expect(el.querySelector('img, script')).toBeNull();
    expect(texts(el.querySelector('.jp-Kernelcore-details')!)).toContain(HOSTILE_OP);
    view.dispose();
  });

  it('draws sub-blocks as clusters that fold and unfold from their label', async () => {
    const el = container();
    const m = model(withSubBlock());
    const view = new ProgramGraphView(m, el);
    await view.ready;
    const cluster = view.left.clusterEls.get('cluster_1')!;
    expect(cluster.classList.contains('cluster')).toBe(true);
    expect(view.left.nodeEls.get('o1:0')).toBeDefined();
    click(cluster.querySelector('text.jp-Kernelcore-clusterLabel')!);
    expect(m.get('collapsed')).toEqual(['cluster_1']);
    await view.ready;
    const folded = view.left.clusterEls.get('cluster_1')!;
    expect(folded.classList.contains('jp-Kernelcore-collapsed')).toBe(true);
    expect(el.querySelectorAll('g.node.jp-Kernelcore-op').length).toBe(1); // only the recurrent op
    // The ops inside are drawn by the folded node.
    expect(view.left.nodeEls.get('o1:0')).toBe(folded);
    click(folded.querySelector('text')!);
    expect(m.get('collapsed')).toEqual([]);
    await view.ready;
    expect(el.querySelectorAll('g.node.jp-Kernelcore-op').length).toBe(3);
    view.dispose();
  });

  it('starts big programs folded into groups', async () => {
    const el = container();
    const m = model(chain(400));
    const view = new ProgramGraphView(m, el);
    await view.ready;
    const collapsed: string[] = m.get('collapsed');
    expect(collapsed.length).toBe(4); // 400 ops in groups of 100
    expect(collapsed.every(c => /^group_0_\d+$/.test(c))).toBe(true);
    expect(el.querySelectorAll('g.node').length).toBeLessThan(20);
    // unfold one group
    m.set('collapsed', collapsed.slice(1));
    await view.ready;
    expect(el.querySelectorAll('g.node.jp-Kernelcore-op').length).toBe(100);
    view.dispose();
  });

  /** chain(n) carrying version 2 groups: [id, kind, first op, last op, parent]; a var sits with its writer. */
  function grouped(n: number, groups: Array<[string, string, number, number, string | null]>) {
    const p = chain(n) as any;
    p.version = 2;
    p.blocks[0].groups = groups.map(([id, kind, first, last, parent]) => ({ id, kind, label: id, first, last, ops: last - first + 1, parent }));
    const innermost = (i: number) => groups.filter(([, , f, l]) => f <= i && i <= l).at(-1)?.[0];
    p.blocks[0].ops.forEach((op: any, i: number) => (op.group = innermost(i)));
    p.blocks[0].vars.forEach((v: any, i: number) => (v.group = innermost(Math.max(0, i - 1))));
    return p;
  }

  it('"Fold all" folds every group of a small program, stages excepted (it used to draw it whole)', async () => {
    // ResNet-18's shape: a few range groups and under 300 nodes, drawn whole at first
    const el = container();
    const m = model(grouped(40, [['g0', 'range', 0, 19, null], ['g1', 'range', 20, 39, null]]));
    const view = new ProgramGraphView(m, el);
    await view.ready;
    expect(el.querySelectorAll('g.node.jp-Kernelcore-op').length).toBe(40);
    const foldAll = [...el.querySelectorAll('button')].find(b => b.textContent === 'Fold all')!;
    foldAll.click();
    await view.ready;
    expect(m.get('collapsed')).toEqual(['g0', 'g1']);
    expect(el.querySelectorAll('g.node').length).toBe(2);
    view.dispose();
  });

  it('"Fold all" keeps the stages open and folds the layers inside them', async () => {
    const el = container();
    const m = model(grouped(6, [['fwd', 'stage', 0, 5, null], ['fc_0', 'layer', 0, 2, 'fwd'], ['fc_1', 'layer', 3, 5, 'fwd']]));
    const view = new ProgramGraphView(m, el);
    await view.ready;
    const before = el.querySelectorAll('g.node').length;
    view.foldAll();
    await view.ready;
    expect(m.get('collapsed')).toEqual(['fc_0', 'fc_1']);
    const after = el.querySelectorAll('g.node').length;
    expect(after).toBeLessThan(before);
    expect(after).toBe(2); // the two folded layers inside the open stage
    view.dispose();
  });

  it('opens a wide program at its first op, not at the top-left corner of its parameters', async () => {
    // ResNet-like: the first op reads many parameters, drawn side by side over its rank
    const params = Array.from({ length: 40 }, (_, i) => ({ id: `v0:p${i}`, name: `p${i}`, dtype: 'float32', shape: [64], kind: 'param', persistable: true }));
    const p = chain(30) as any;
    p.blocks[0].vars.push(...params);
    p.blocks[0].ops[0].inputs.W = params.map(v => v.name);
    const el = container();
    const view = new ProgramGraphView(model(p), el);
    const rect = { left: 0, top: 0, width: 600, height: 400, right: 600, bottom: 400, x: 0, y: 0, toJSON: () => ({}) };
    view.left.canvas.getBoundingClientRect = () => rect;
    await view.ready;
    const vb = view.left.viewBox!;
    const svg = el.querySelector('svg.jp-Kernelcore-svg')!;
    // the first op's label in SVG user units: its text anchor moved by the root group's translate
    const t = nodeOf(view, 'o0:0').querySelector('text')!;
    const [tx, ty] = svg.querySelector('g.graph')!.getAttribute('transform')!.match(/translate\(([^)]*)\)/)![1].split(/[ ,]+/).map(Number);
    const x = Number(t.getAttribute('x')) + tx;
    const y = Number(t.getAttribute('y')) + ty;
    expect(x).toBeGreaterThan(vb.x);
    expect(x).toBeLessThan(vb.x + vb.w);
    expect(y).toBeGreaterThan(vb.y);
    expect(y).toBeLessThan(vb.y + vb.h);
    expect(vb.w).toBeCloseTo(600 / OPEN_MIN_SCALE); // at the readable scale, not the whole width
    view.dispose();
  });

  it('opens and fits a small program no larger than MAX_SCALE, centered', async () => {
    const el = container();
    const view = new ProgramGraphView(model(chain(1) as any), el);
    const rect = { left: 0, top: 0, width: 1200, height: 900, right: 1200, bottom: 900, x: 0, y: 0, toJSON: () => ({}) };
    view.left.canvas.getBoundingClientRect = () => rect;
    await view.ready;
    for (const when of ['opened', 'fitted']) {
      if (when === 'fitted') {
        view.left.fit();
      }
      const vb = view.left.viewBox!;
      expect(vb.w, when).toBeCloseTo(1200 / MAX_SCALE);
      expect(vb.h, when).toBeCloseTo(900 / MAX_SCALE);
    }
    view.dispose();
  });

  it('highlights search matches', async () => {
    const el = container();
    const m = model(mlp());
    const view = new ProgramGraphView(m, el);
    await view.ready;
    m.pythonSets('search', 'mul');
    const matched = [...el.querySelectorAll('g.node.jp-Kernelcore-match')];
    expect(matched.length).toBe(2); // mul, mul_grad
    expect(el.querySelector('.jp-Kernelcore-count')!.textContent).toBe('2 matches');
    const input = el.querySelector('input.jp-Kernelcore-search') as HTMLInputElement;
    expect(input.value).toBe('mul');
    input.value = 'GRAD';
    input.dispatchEvent(new Event('input'));
    expect(el.querySelectorAll('g.node.jp-Kernelcore-match').length).toBe(2); // w@GRAD var, mul_grad op
    await new Promise(r => setTimeout(r, 200));
    expect(m.get('search')).toBe('GRAD');
    view.dispose();
  });

  it('draws side by side with kept ops matched', async () => {
    const el = container();
    const orig = mlp();
    const pruned = mlp();
    pruned.blocks[0].ops = [orig.blocks[0].ops[0], { ...orig.blocks[0].ops[1], id: 'o0:1' }];
    pruned.blocks[0].vars = orig.blocks[0].vars.filter(v => ['x', 'w', 'h', 'y'].includes(v.name));
    pruned.pruned = { removed_ops: ['o0:2', 'o0:3', 'o0:4'], removed_vars: ['v0:w@GRAD'], kept_map: { 'o0:0': 'o0:0', 'o0:1': 'o0:1' } };
    const m = model(orig, { pruned_program: pruned });
    const view = new ProgramGraphView(m, el);
    await view.ready;
    expect(el.querySelectorAll('.jp-Kernelcore-graphPane').length).toBe(2);
    expect(nodeOf(view, 'o0:3').classList.contains('jp-Kernelcore-pruned')).toBe(true);
    nodeOf(view, 'o0:1', 'right').dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    expect(nodeOf(view, 'o0:1').classList.contains('jp-Kernelcore-partner')).toBe(true);
    nodeOf(view, 'o0:0').dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    expect(nodeOf(view, 'o0:0', 'right').classList.contains('jp-Kernelcore-partner')).toBe(true);
    click(nodeOf(view, 'v0:h', 'right'));
    expect(m.sent.at(-1)).toEqual({ type: 'select', id: 'v0:h' });
    m.set('pruned_program', null);
    await view.ready;
    expect(el.querySelectorAll('.jp-Kernelcore-graphPane').length).toBe(1);
    view.dispose();
  });

  it('zooms and fits', async () => {
    const el = container();
    const view = new ProgramGraphView(model(mlp()), el);
    await view.ready;
    const vb0 = view.left.viewBox!;
    view.left.zoom(0.5);
    const vb1 = view.left.viewBox!;
    expect(vb1.w).toBeCloseTo(vb0.w * 0.5);
    el.querySelector('canvas, .jp-Kernelcore-graphCanvas')!.dispatchEvent(new WheelEvent('wheel', { deltaY: 100, bubbles: true, cancelable: true }));
    expect(view.left.viewBox!.w).toBeGreaterThan(vb1.w);
    (el.querySelector('.jp-Kernelcore-fit') as HTMLButtonElement).click();
    expect(view.left.viewBox).toEqual(vb0);
    view.dispose();
  });

  it('falls back to the DOT from Python when blocks are missing', async () => {
    const el = container();
    const m = model({ schema: 'kernelcore.program', version: 1, dot: 'digraph { "o0:0" [label="mul"]; "v0:x" -> "o0:0" }' });
    const view = new ProgramGraphView(m, el);
    await view.ready;
    expect(el.querySelectorAll('g.node').length).toBe(2);
    click(view.left.nodeEls.get('o0:0')!);
    expect(m.sent).toEqual([{ type: 'select', id: 'o0:0' }]);
    view.dispose();
  });

  it('disposes cleanly while a layout is in flight', async () => {
    const el = container();
    const m = model(mlp());
    const view = new ProgramGraphView(m, el);
    view.dispose();
    await view.ready;
    await flush();
    expect(el.querySelector('svg')).toBeNull();
    expect(m.listenerCount()).toBe(0);
  });
});

describe('DOT escaping', () => {
  it('quotes labels so Graphviz shows them verbatim', async () => {
    const nasty = ['a"b', 'back\\slash', '\\N\\G\\L', 'x\ny', HOSTILE, '</text><script>alert(3)</script>', '&amp;'];
    for (const s of nasty) {
      const q = dotQuote(s);
      expect(q.startsWith('"') && q.endsWith('"')).toBe(true);
      expect(q.slice(1, -1)).not.toMatch(/(^|[^\\])"/);
    }
    const dot = `digraph { ${nasty.map((s, i) => `n${i} [label=${dotQuote(s)}];`).join(' ')} }`;
    const svg = await vizLayout(dot);
    const shown = texts(svg as unknown as Element);
    expect(shown).toEqual(expect.arrayContaining(['a"b', 'back\\slash', '\\N\\G\\L', 'x y', HOSTILE, '</text><script>alert(3)</script>', '&amp;']));
    expect(svg.querySelector('script, img')).toBeNull();
  });

  it('groups big blocks without tiny groups when roles interleave', () => {
    const p = chain(400);
    p.blocks[0].ops.forEach((op, i) => {
      op.role = i % 3 ? 'forward' : 'backward';
      op.type = i % 3 ? 'relu' : 'relu_grad';
    });
    const g = new ProgramGraphModel(p);
    const groups = [...g.clusters.values()].filter(c => c.kind === 'group');
    expect(groups.length).toBe(4);
    expect(groups[0].label).toBe('block 0 ops 0\u201399 (backward, forward)');
    expect(g.defaultCollapsed().length).toBe(4);
    // folded, the DOT holds one node per group and the edges between groups, once each
    const dot = g.toDot(new Set(g.defaultCollapsed()), 'p_');
    expect(dot.match(/\[id="p_C_cluster_g0_\d+"/g)!.length).toBe(4);
    expect(dot.match(/ -> /g)!.length).toBe(3);
  });

  it('draws one edge per (open group, folded group) pair when a group is unfolded', async () => {
    const p = chain(400);
    const ops = p.blocks[0].ops;
    // the last op (in the last group) reads every variable made in group 1 (ops 100-199), and the
    // first op of group 1 writes a second output read in group 2: many edges between the same pairs
    ops[399].inputs = { X: ['t399'], Y: ops.slice(100, 200).map(o => o.outputs?.Out[0] ?? "") };
    ops[250].inputs = { X: ['t250'], Y: ['t101', 't150', 't199'] };
    const g = new ProgramGraphModel(p);
    const groups = [...g.clusters.values()].filter(c => c.kind === 'group').map(c => c.id);
    expect(groups.length).toBe(4);
    const folded = new Set(groups.filter(id => id !== 'group_0_1'));
    const dot = g.toDot(folded, 'p_');
    const edges = dot.split('\n').filter(l => l.includes(' -> '));
    const pairs = edges.map(l => {
      const [a, rest] = l.trim().split(' -> ');
      const b = rest.split(' ')[0];
      const tail = /ltail=(\w+)/.exec(l)?.[1] ?? a;
      const head = /lhead=(\w+)/.exec(l)?.[1] ?? b;
      return `${tail}>${head}`;
    });
    // one edge per pair and direction
    expect(new Set(pairs).size).toBe(pairs.length);
    // the open group's 100 variables feeding group 3 (and 3 feeding group 2) are one edge each
    expect(pairs.filter(s => s === 'cluster_g0_1>C_cluster_g0_3').length).toBe(1);
    expect(pairs.filter(s => s === 'cluster_g0_1>C_cluster_g0_2').length).toBe(1);
    expect(edges.filter(l => /lhead=|ltail=/.test(l)).length).toBeLessThanOrEqual(4);
    expect(edges.length).toBeLessThan(250);
    // edges between two folded groups do not constrain ranks
    const foldedPair = edges.filter(l => /^\s*C_cluster_g0_\d+ -> C_cluster_g0_\d+ /.test(l));
    expect(foldedPair.length).toBeGreaterThan(0);
    foldedPair.forEach(l => expect(l).toContain('constraint=false'));
    // all folded: the chain of groups keeps its ranks
    expect(g.toDot(new Set(groups), 'p_')).not.toContain('constraint=false');
    // more than NSLIMIT_ABOVE nodes in the DOT bound the network simplex
    expect(dot).not.toContain('nslimit');
    expect(g.toDot(new Set(groups), 'p_')).not.toContain('nslimit');
    expect(g.toDot(new Set(), 'p_')).toContain('nslimit=3, nslimit1=3');
    const svg = await vizLayout(dot);
    expect(svg.querySelectorAll('g.edge').length).toBe(edges.length);
  });

  it('builds DOT from ProgramJSON with only synthetic ids', () => {
    const g = new ProgramGraphModel(mlp());
    const dot = g.toDot(new Set(), 'kcT_');
    // every statement's first token is a synthetic name
    for (const line of dot.split('\n').slice(4, -1)) {
      expect(line.trim()).toMatch(/^(n\d+|C_cluster\w+|subgraph cluster\w+|graph \[|\}|cluster\w+_empty)/);
    }
  });
});
