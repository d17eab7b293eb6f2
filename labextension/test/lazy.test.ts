import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProgramGraphModel } from '../src/graph';
import type { GroupContentsJSON, ProgramJSON, PrunedJSON } from '../src/schema';
import type { SearchResult } from '../src/parts';
import { ProgramGraphView } from '../src/views/ProgramGraph';
import { container, FakeModel, flush } from './fake-model';

/** A 20-layer training MLP sent in parts, the kernel's answers to the requests made here, and its whole
 * ProgramJSON (tests/make_frontend_fixtures.py, from kernelcore.program_parts). */
const LAZY: {
  skeleton: ProgramJSON;
  whole: ProgramJSON;
  replies: Record<string, GroupContentsJSON>;
  search: SearchResult;
  pruned: { skeleton: PrunedJSON; replies: Record<string, PrunedJSON> };
} = JSON.parse(
  readFileSync(join(__dirname, 'data', 'mlp_lazy.json'), 'utf8')
);
const key = (groups: string[], loaded: string[]) => JSON.stringify({ g: [...groups].sort(), l: [...loaded].sort() });

/** The drawn edges of `g` with `collapsed` folded, by program id (ops/vars) or group id, with their weight. */
function drawnEdges(g: ProgramGraphModel, collapsed: Set<string>): string[] {
  const idOf = new Map<string, string>();
  g.nodes.forEach(n => idOf.set(n.key, n.id));
  g.clusters.forEach((_c, cid) => idOf.set(g.collapsedKey(cid), cid));
  const out: string[] = [];
  for (const line of g.toDot(collapsed, 'p_').split('\n')) {
    const m = /^\s+(\S+) -> (\S+) \[(.*)\];$/.exec(line);
    if (m) {
      const pw = /penwidth=([\d.]+)/.exec(m[3]);
      out.push(`${idOf.get(m[1]) ?? m[1]} > ${idOf.get(m[2]) ?? m[2]} ${pw ? pw[1] : '1'} ${/constraint=false/.test(m[3]) ? 'back' : ''}`);
    }
  }
  return out.sort();
}

/** What the view does with an answer: ops and vars added, groups known, refs/external/edges replaced. */
function merged(p: ProgramJSON, opened: string[], r: GroupContentsJSON): ProgramJSON {
  const q: ProgramJSON = JSON.parse(JSON.stringify(p));
  const b = q.blocks[0];
  b.ops.push(...r.ops);
  b.vars.push(...r.vars);
  for (const g of r.known) {
    if (!b.groups!.some(x => x.id === g.id)) {
      b.groups!.push({ ...g, loaded: false });
    }
  }
  b.groups!.forEach(g => opened.includes(g.id) && (g.loaded = true));
  Object.assign(b, { refs: r.refs, external: r.external, edges: r.edges });
  return q;
}

/** A fake kernel: answers the view's requests from the fixture (an unexpected request fails the test);
 * `pruned`: as a pruned view's widget does, each answer carries what pruning removed from it. */
function serve(model: FakeModel, pruned = false): () => Promise<void> {
  const answered = new Set<any>();
  return async () => {
    for (let i = 0; i < 8; i++) {
      await flush();
      for (const m of model.sent.filter(x => !answered.has(x) && (x.type === 'contents' || x.type === 'search'))) {
        answered.add(m);
        const k = key(m.groups ?? [], m.loaded ?? []);
        const plain = m.type === 'search' ? LAZY.search : LAZY.replies[k];
        const result = pruned && plain && m.type === 'contents' ? { ...plain, pruned: LAZY.pruned.replies[k] } : plain;
        const reply = result ? { type: 'parts', req: m.req, ok: true, error: null, result } : { type: 'parts', req: m.req, ok: false, error: `no fixture for ${key(m.groups, m.loaded)}`, result: null };
        (model.handlers['msg:custom'] ?? []).forEach(cb => cb(reply));
      }
    }
  };
}

function viewOf(program: ProgramJSON) {
  const model = new FakeModel({ program, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
  return { model, view: new ProgramGraphView(model as any, container()) };
}

afterEach(() => {
  document.body.textContent = '';
});

describe('a lazy program (ProgramJSON version 3)', () => {
  it('draws from the skeleton what the whole program draws, before and after opening groups', () => {
    const lazy = new ProgramGraphModel(LAZY.skeleton);
    const whole = new ProgramGraphModel(LAZY.whole);
    expect(lazy.lazy).toBe(true);
    expect(lazy.clusters.size).toBeLessThan(whole.clusters.size / 4);
    expect(lazy.nodes.size).toBeLessThan(whole.nodes.size / 10);
    expect(lazy.totalNodes).toBe(whole.nodes.size);
    expect(lazy.opCount).toBe(whole.opCount);
    const folded = new Set(lazy.defaultCollapsed());
    // the whole program folded alike: every group the skeleton does not know sits in a folded one
    const wholeFolded = new Set(whole.defaultCollapsed());
    expect(whole.visibleCount(wholeFolded)).toBe(lazy.visibleCount(folded));
    expect(drawnEdges(lazy, folded)).toEqual(drawnEdges(whole, wholeFolded));
    expect(lazy.unloadedOpen(folded).size).toBe(0);
    // open the forward repeat, then its first kid: the answers refine the drawing to the whole program's
    const stages = LAZY.skeleton.blocks[0].groups!.filter(g => g.loaded).map(g => g.id);
    const repeat = [...lazy.clusters.values()].find(c => c.gkind === 'repeat')!;
    const open1 = new Set(folded);
    open1.delete(repeat.id);
    expect([...lazy.unloadedOpen(open1).values()].flat()).toEqual([repeat.id]);
    const r1 = LAZY.replies[key([repeat.id], [...stages, repeat.id])];
    const g1 = new ProgramGraphModel(merged(LAZY.skeleton, [repeat.id], r1));
    const kids = g1.clusters.get(repeat.id)!.kids;
    expect(kids.length).toBe(repeat.kidsCount);
    kids.forEach(k => open1.add(k)); // known now, folded
    const w1 = new Set(wholeFolded);
    w1.delete(repeat.id);
    expect(g1.visibleCount(open1)).toBe(whole.visibleCount(w1));
    expect(drawnEdges(g1, open1)).toEqual(drawnEdges(whole, w1));
    const kid = kids[0];
    const r2 = LAZY.replies[key([kid], [...stages, repeat.id, kid])];
    const g2 = new ProgramGraphModel(merged(merged(LAZY.skeleton, [repeat.id], r1), [repeat.id, kid], r2));
    const open2 = new Set(open1);
    open2.delete(kid);
    g2.clusters.get(kid)!.kids.forEach(k => open2.add(k));
    const w2 = new Set(w1);
    w2.delete(kid);
    expect(g2.unloadedOpen(open2).size).toBe(0);
    expect(g2.visibleCount(open2)).toBe(whole.visibleCount(w2));
    expect(drawnEdges(g2, open2)).toEqual(drawnEdges(whole, w2));
  });

  it('opens a group by asking the widget model, and says to re-run the cell when no answer can come', async () => {
    const { model, view } = viewOf(LAZY.skeleton);
    await view.ready;
    const repeat = [...view.graph!.clusters.values()].find(c => c.gkind === 'repeat')!;
    expect(repeat.loaded).toBe(false);
    model.set('collapsed', (model.get('collapsed') as string[]).filter(id => id !== repeat.id));
    await flush();
    const ask = model.sent.find(m => m.type === 'contents');
    expect(ask).toMatchObject({ type: 'contents', block: 0, groups: [repeat.id] });
    expect(view.root.textContent).toContain('loading');
    await serve(model)();
    await view.ready;
    const opened = view.graph!.clusters.get(repeat.id)!;
    expect(opened.loaded).toBe(true);
    expect(view.left.clusterEls.has(repeat.id)).toBe(true);
    // its kids are known now and start folded
    expect(opened.kids.length).toBeGreaterThan(3);
    opened.kids.forEach(k => expect((model.get('collapsed') as string[]).includes(k)).toBe(true));
    // a kernel that answers no more: the group stays folded and the view says what to do
    const kid = opened.kids[1];
    model.set('collapsed', (model.get('collapsed') as string[]).filter(id => id !== kid));
    await flush();
    const ask2 = model.sent.filter(m => m.type === 'contents')[1];
    expect(ask2.loaded).toContain(repeat.id);
    (model.handlers['msg:custom'] ?? []).forEach(cb => cb({ type: 'parts', req: ask2.req, ok: false, error: "program 'p1' is not in this kernel (was it restarted?); re-run the cell to open it", result: null }));
    await flush();
    await view.ready;
    expect(view.root.querySelector('.jp-Kernelcore-note')!.textContent).toContain('re-run the cell');
    expect((model.get('collapsed') as string[]).includes(kid)).toBe(true);
    view.dispose();
  });

  it('opens the groups of a pruned program drawn beside in parts too, asking for the pruned pane', async () => {
    // the pane beside gets a skeleton as well (here the same program's): a click on its folded repeat asks
    // with pane "pruned", the answer is merged there, and the main pane asks nothing
    const model = new FakeModel({ program: LAZY.skeleton, pruned_program: LAZY.skeleton, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(model as any, container());
    await view.ready;
    expect(view.right).not.toBeNull();
    const repeat = [...view.prunedGraph!.clusters.values()].find(c => c.gkind === 'repeat')!;
    expect(repeat.loaded).toBe(false);
    view.right!.onToggle!(repeat.id);
    await flush();
    const ask = model.sent.find(m => m.type === 'contents');
    expect(ask).toMatchObject({ type: 'contents', block: 0, groups: [repeat.id], pane: 'pruned' });
    await serve(model)();
    await view.ready;
    const opened = view.prunedGraph!.clusters.get(repeat.id)!;
    expect(opened.loaded).toBe(true);
    expect(opened.kids.length).toBe(repeat.kidsCount);
    expect(view.right!.clusterEls.has(repeat.id)).toBe(true);       // drawn open beside
    // its kids arrived known and are drawn folded beside
    const folded = view.right!.el.querySelectorAll('svg g.node.jp-Kernelcore-collapsed').length;
    expect(folded).toBeGreaterThanOrEqual(opened.kids.length);
    expect(view.graph!.clusters.get(repeat.id)!.loaded).toBe(false); // the main pane untouched
    expect(model.sent.filter(m => m.type === 'contents').length).toBe(1);
    view.dispose();
  });

  it('the pane beside searches its own program in the kernel and marks the folded group around a hit', async () => {
    const model = new FakeModel({ program: LAZY.skeleton, pruned_program: LAZY.skeleton, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(model as any, container());
    await view.ready;
    const input = view.root.querySelector('input.jp-Kernelcore-search') as HTMLInputElement;
    input.value = 'fc_7.w_0';
    input.dispatchEvent(new Event('input'));
    await new Promise(r => setTimeout(r, 200)); // the typing pause before a search is asked
    await serve(model)();
    const asks = model.sent.filter(m => m.type === 'search');
    expect(asks.map(m => m.pane ?? 'main').sort()).toEqual(['main', 'pruned']);
    asks.forEach(m => expect(m.query).toBe('fc_7.w_0'));
    // the hit sits in groups the pane beside has folded: the outermost one drawn carries the match
    const marked = [...view.right!.clusterEls.entries()].filter(([, el]) => el.classList.contains('jp-Kernelcore-match')).map(([id]) => id);
    const hit = LAZY.search.hits.find(h => h.name === 'fc_7.w_0')!;
    expect(marked.filter(id => hit.path!.includes(id)).length).toBe(1); // one mark on the way to it
    expect(marked.length).toBeLessThanOrEqual(LAZY.search.hits.length);
    view.dispose();
  });

  it('finds names in groups it does not know, and opens the groups around a hit', async () => {
    const { model, view } = viewOf(LAZY.skeleton);
    await view.ready;
    const target = LAZY.whole.blocks[0].vars.find(v => v.name === 'fc_7.w_0')!;
    expect(view.graph!.byId.has(target.id)).toBe(false);
    expect(view.graph!.clusters.has(target.group!)).toBe(false);
    const input = view.root.querySelector('input.jp-Kernelcore-search') as HTMLInputElement;
    input.value = 'fc_7.w_0';
    input.dispatchEvent(new Event('input'));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    const answer = serve(model);
    await answer();
    await view.ready;
    await answer();
    await view.ready;
    expect(model.sent.find(m => m.type === 'search')).toMatchObject({ query: 'fc_7.w_0' });
    expect(view.root.querySelector('.jp-Kernelcore-note')?.textContent ?? '').toBe('');
    expect(view.graph!.byId.has(target.id)).toBe(true);
    expect(view.left.nodeEls.get(target.id)?.classList.contains('jp-Kernelcore-match')).toBe(true);
    view.dispose();
  });

  it('marks what pruning removed as the parts arrive: removed nodes, emptied and thinned groups', async () => {
    const { model, view } = viewOf({ ...LAZY.skeleton, pruned: LAZY.pruned.skeleton });
    await view.ready;
    const first = LAZY.pruned.skeleton.groups!;
    const cls = (cid: string) => view.left.clusterEls.get(cid)?.getAttribute('class') ?? '';
    // the skeleton's groups: the stages pruning emptied are greyed, the one it thinned is dashed
    const drawn = Object.keys(first).filter(cid => view.left.clusterEls.has(cid));
    expect(drawn.length).toBeGreaterThan(1);
    drawn.forEach(cid => expect(cls(cid)).toContain(first[cid] === 'all' ? 'jp-Kernelcore-pruned' : 'jp-Kernelcore-partPruned'));
    expect(view.root.textContent).toContain(`${LAZY.pruned.skeleton.counts!.ops} ops pruned`);
    // the removed op the skeleton itself carries (the stage-level loss op) is greyed
    const gone = LAZY.pruned.skeleton.removed_ops.filter(id => view.left.nodeEls.has(id));
    expect(gone.length).toBe(1);
    expect(view.left.nodeEls.get(gone[0])!.getAttribute('class')).toContain('jp-Kernelcore-pruned');
    // open the forward repeat: its layers arrive with their marks, and the tenth (thinned) is dashed
    const repeat = [...view.graph!.clusters.values()].find(c => c.gkind === 'repeat')!;
    model.set('collapsed', (model.get('collapsed') as string[]).filter(id => id !== repeat.id));
    await serve(model, true)();
    await view.ready;
    const reply = Object.entries(LAZY.pruned.replies).find(([k]) => JSON.parse(k).g.join() === repeat.id)![1];
    const kids = view.graph!.clusters.get(repeat.id)!.kids;
    const all = kids.filter(k => reply.groups![k] === 'all');
    const some = kids.filter(k => reply.groups![k] === 'some');
    const kept = kids.filter(k => !reply.groups![k]);
    expect(all.length).toBeGreaterThan(0);
    expect(some.length).toBe(1);
    expect(kept.length).toBeGreaterThan(0);
    all.forEach(k => expect(cls(k)).toContain('jp-Kernelcore-pruned'));
    some.forEach(k => expect(cls(k)).toContain('jp-Kernelcore-partPruned'));
    kept.forEach(k => expect(cls(k)).not.toMatch(/Pruned|pruned/));
    view.dispose();
  });
});
