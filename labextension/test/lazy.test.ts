import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProgramGraphModel } from '../src/graph';
import type { GroupContentsJSON, ProgramJSON } from '../src/schema';
import { ProgramGraphView } from '../src/views/ProgramGraph';
import { container, FakeModel, flush } from './fake-model';

/** A 20-layer training MLP sent in parts, what each group's opening answers, and its whole ProgramJSON
 * (tests/make_frontend_fixtures.py, from kernelcore.program_parts). */
const LAZY: { skeleton: ProgramJSON; contents: Record<string, GroupContentsJSON>; whole: ProgramJSON } = JSON.parse(
  readFileSync(join(__dirname, 'data', 'mlp_lazy.json'), 'utf8')
);

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
      const attrs = m[3].replace(/id="[^"]*", ?/, '').replace(/lhead=\S+|ltail=\S+/g, '');
      out.push(`${idOf.get(m[1]) ?? m[1]} > ${idOf.get(m[2]) ?? m[2]} ${pw ? pw[1] : '1'} ${/constraint=false/.test(attrs) ? 'back' : ''}`);
    }
  }
  return out.sort();
}

function merged(skel: ProgramJSON, opened: string[]): ProgramJSON {
  const p: ProgramJSON = JSON.parse(JSON.stringify(skel));
  const b = p.blocks[0];
  for (const gid of opened) {
    const c = LAZY.contents[gid];
    b.ops.push(...c.ops);
    b.vars.push(...c.vars);
    b.groups!.find(g => g.id === gid)!.loaded = true;
    Object.assign(b.refs!, c.refs);
    b.external!.push(...c.external);
  }
  return p;
}

afterEach(() => {
  document.body.textContent = '';
});

describe('a lazy program (ProgramJSON version 3)', () => {
  it('draws from the skeleton what the whole program draws: the same folded groups and merged edges', () => {
    const lazy = new ProgramGraphModel(LAZY.skeleton);
    const whole = new ProgramGraphModel(LAZY.whole);
    expect(lazy.lazy).toBe(true);
    expect(lazy.nodes.size).toBeLessThan(whole.nodes.size / 10);
    expect(lazy.totalNodes).toBe(whole.nodes.size);
    expect(lazy.opCount).toBe(whole.opCount);
    const folded = new Set(whole.defaultCollapsed());
    expect(new Set(lazy.defaultCollapsed())).toEqual(folded);
    expect(lazy.visibleCount(folded)).toBe(whole.visibleCount(folded));
    expect(lazy.unloadedOpen(folded).size).toBe(0);
    expect(drawnEdges(lazy, folded)).toEqual(drawnEdges(whole, folded));
    // open the forward repeat and its first layer: the skeleton says what to fetch, and once fetched the
    // drawing (nodes and edges, to the folded rest too) is the whole program's
    const repeat = [...lazy.clusters.values()].find(c => c.gkind === 'repeat')!;
    const open = new Set(folded);
    open.delete(repeat.id);
    expect(lazy.expandWithin(folded, 10_000).count).toBe(whole.expandWithin(folded, 10_000).count);
    const kid = repeat.kids[0];
    open.delete(kid);
    const need = lazy.unloadedOpen(open);
    expect([...need.values()].flat().sort()).toEqual([repeat.id, kid].filter(id => !lazy.clusters.get(id)!.loaded).sort());
    const after = new ProgramGraphModel(merged(LAZY.skeleton, [...need.values()].flat()));
    expect(after.unloadedOpen(open).size).toBe(0);
    expect(after.visibleCount(open)).toBe(whole.visibleCount(open));
    expect(drawnEdges(after, open)).toEqual(drawnEdges(whole, open));
  });

  it('opens a group by asking the widget model, and says to re-run the cell when no answer can come', async () => {
    const model = new FakeModel({ program: LAZY.skeleton, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(model as any, container());
    await view.ready;
    const g = view.graph!;
    const repeat = [...g.clusters.values()].find(c => c.gkind === 'repeat')!;
    expect(repeat.loaded).toBe(false);
    const collapsed = (model.get('collapsed') as string[]).filter(id => id !== repeat.id);
    model.set('collapsed', collapsed);
    await flush();
    const ask = model.sent.find(m => m.type === 'contents');
    expect(ask).toMatchObject({ type: 'contents', block: 0, groups: [repeat.id] });
    expect(view.root.textContent).toContain('loading');
    (model.handlers['msg:custom'] ?? []).forEach(cb => cb({ type: 'parts', req: ask.req, ok: true, error: null, result: LAZY.contents[repeat.id] }));
    await flush();
    await view.ready;
    expect(view.graph!.clusters.get(repeat.id)!.loaded).toBe(true);
    expect(view.left.clusterEls.has(repeat.id)).toBe(true);
    // a kernel that answers no more: the group stays folded and the view says what to do
    const kid = view.graph!.clusters.get(repeat.id)!.kids[0];
    model.set('collapsed', (model.get('collapsed') as string[]).filter(id => id !== kid));
    await flush();
    const ask2 = model.sent.filter(m => m.type === 'contents')[1];
    (model.handlers['msg:custom'] ?? []).forEach(cb => cb({ type: 'parts', req: ask2.req, ok: false, error: "program 'p1' is not in this kernel (was it restarted?); re-run the cell to open it", result: null }));
    await flush();
    await view.ready;
    expect(view.root.querySelector('.jp-Kernelcore-note')!.textContent).toContain('re-run the cell');
    expect((model.get('collapsed') as string[]).includes(kid)).toBe(true);
    view.dispose();
  });

  it('finds names in groups not fetched, and opens the groups around a hit', async () => {
    const model = new FakeModel({ program: LAZY.skeleton, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(model as any, container());
    await view.ready;
    const target = LAZY.whole.blocks[0].vars.find(v => v.name === 'fc_7.w_0')!;
    expect(view.graph!.byId.has(target.id)).toBe(false);
    const input = view.root.querySelector('input.jp-Kernelcore-search') as HTMLInputElement;
    input.value = 'fc_7.w_0';
    input.dispatchEvent(new Event('input'));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    await flush();
    const ask = model.sent.find(m => m.type === 'search');
    expect(ask).toMatchObject({ query: 'fc_7.w_0' });
    const answer = (m: any, result: unknown) => (model.handlers['msg:custom'] ?? []).forEach(cb => cb({ type: 'parts', req: m.req, ok: true, error: null, result }));
    answer(ask, { hits: [{ id: target.id, name: target.name, block: 0, group: target.group }], total: 1 });
    // the reveal opens the groups around the hit, fetching each as the kernel would answer
    for (let i = 0; i < 10; i++) {
      await flush();
      for (const m of model.sent.filter(x => x.type === 'contents' && !x.answered)) {
        m.answered = true;
        const c = (m.groups as string[]).map(id => LAZY.contents[id]);
        answer(m, { block: 0, groups: m.groups, ops: c.flatMap(x => x.ops), vars: c.flatMap(x => x.vars), refs: Object.assign({}, ...c.map(x => x.refs)), external: c.flatMap(x => x.external) });
      }
      await view.ready;
    }
    expect(view.graph!.byId.has(target.id)).toBe(true);
    expect(view.left.nodeEls.get(target.id)?.classList.contains('jp-Kernelcore-match')).toBe(true);
    view.dispose();
  });
});
