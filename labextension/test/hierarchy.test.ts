import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProgramGraphView } from '../src/views/ProgramGraph';
import { EXPAND_BUDGET, ProgramGraphModel } from '../src/graph';
import type { ProgramJSON } from '../src/schema';
import { container, FakeModel } from './fake-model';

/** What Python writes for a 50-layer training MLP (tests/make_frontend_fixtures.py). */
const MLP: ProgramJSON = JSON.parse(readFileSync(join(__dirname, 'data', 'mlp_v2.json'), 'utf8'));

function model(program: unknown) {
  return new FakeModel({ program, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
}

afterEach(() => {
  document.body.textContent = '';
});

describe('ProgramGraph hierarchy (ProgramJSON version 2)', () => {
  it('builds clusters from the groups: stages open, layers and repeats folded', () => {
    const g = new ProgramGraphModel(MLP);
    expect(g.hierarchical).toBe(true);
    const top = g.topClusters.map(id => g.clusters.get(id)!);
    expect(top.map(c => [c.gkind, c.label])).toEqual([
      ['stage', 'forward'],
      ['stage', 'backward'],
      ['stage', 'optimize']
    ]);
    const folded = new Set(g.defaultCollapsed());
    top.forEach(c => expect(folded.has(c.id)).toBe(false));
    const repeats = [...g.clusters.values()].filter(c => c.gkind === 'repeat');
    expect(repeats.map(c => c.count)).toEqual([50, 50, 50]);
    repeats.forEach(c => expect(folded.has(c.id)).toBe(true));
    // the first view is a handful of nodes, not the program's hundreds
    expect(g.visibleCount(folded)).toBeLessThan(30);
    expect(g.nodes.size).toBeGreaterThan(EXPAND_BUDGET);
    // every op sits in the group Python named
    for (const b of MLP.blocks) {
      for (const op of b.ops) {
        const n = g.nodes.get(g.byId.get(op.id)!)!;
        expect(n.container).toBe(op.group ?? null);
      }
    }
  });

  it('expands within a node budget, outermost first', () => {
    const g = new ProgramGraphModel(MLP);
    const start = new Set(g.defaultCollapsed());
    const small = g.expandWithin(start, 40);
    expect(small.opened).toBeGreaterThan(0);
    expect(small.left).toBeGreaterThan(0);
    expect(g.visibleCount(small.collapsed)).toBe(small.count);
    expect(small.count).toBeLessThanOrEqual(40);
    const all = g.expandWithin(start, 1e9);
    expect(all.left).toBe(0);
    expect(all.collapsed.size).toBe(0);
    expect(all.count).toBe(g.nodes.size);
  });

  it('draws folded repeats, opens one on click, refuses to draw it all at once', async () => {
    const el = container();
    const m = model(MLP);
    const view = new ProgramGraphView(m as never, el);
    await view.ready;
    const repeat = el.querySelector('g.node.jp-Kernelcore-gkind-repeat');
    expect(repeat).not.toBeNull();
    expect(repeat!.textContent).toContain('\u00d750');
    repeat!.querySelector('text')!.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    await view.ready;
    // the repeat is open: its 50 layers are in two ranges (at most 48 things per opened group)
    expect(el.querySelectorAll('g.node.jp-Kernelcore-gkind-range').length).toBe(2);
    expect(el.querySelector('.jp-Kernelcore-crumbs')!.textContent).toContain('fc \u00d750');
    // Expand all: more than the budget, so it opens what fits and says so
    view.expandBudget = 60;
    const btn = [...el.querySelectorAll('button')].find(b => b.textContent === 'Expand all')!;
    btn.click();
    await view.ready;
    const note = el.querySelector('.jp-Kernelcore-note')!;
    expect(note.textContent).toMatch(/stay folded/);
    expect(note.textContent).toContain('more than 60');
    const col = new Set(m.get('collapsed') as string[]);
    const g = new ProgramGraphModel(MLP);
    const shown = g.visibleCount(col);
    expect(shown).toBeLessThanOrEqual(60);
    expect(el.querySelectorAll('svg g.node').length).toBe(shown);
    view.dispose();
  });

  it('a click that would draw more than the draw limit leaves the group folded and says why', async () => {
    const el = container();
    const m = model(MLP);
    const view = new ProgramGraphView(m as never, el);
    await view.ready;
    const before = [...(m.get('collapsed') as string[])];
    const shown = el.querySelectorAll('svg g.node').length;
    view.drawLimit = shown; // the repeat opens into two ranges: one node more than now, more than the limit
    const click = () => el.querySelector('g.node.jp-Kernelcore-gkind-repeat text')!.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    click();
    await view.ready;
    expect(m.get('collapsed')).toEqual(before);
    const note = el.querySelector('.jp-Kernelcore-note')!;
    expect(note.textContent).toContain('stays folded');
    expect(note.textContent).toContain(`${shown + 1} nodes`);
    // within the limit, the same click opens it and the note goes
    view.drawLimit = shown + 1;
    click();
    await view.ready;
    expect(el.querySelectorAll('g.node.jp-Kernelcore-gkind-range').length).toBe(2);
    expect(note.textContent).toBe('');
    view.dispose();
  });

  it('search + Enter opens the groups around a match and shows it, with breadcrumbs', async () => {
    const el = container();
    const m = model(MLP);
    const view = new ProgramGraphView(m as never, el);
    await view.ready;
    const target = 'fc_7.w_0';
    expect(view.left.nodeEls.get(`v0:${target}`)?.classList.contains('jp-Kernelcore-collapsed')).toBe(true);
    const input = el.querySelector('input.jp-Kernelcore-search') as HTMLInputElement;
    input.value = target;
    input.dispatchEvent(new Event('input'));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    await view.ready;
    for (let i = 0; i < 50 && view.left.nodeEls.get(`v0:${target}`)?.classList.contains('jp-Kernelcore-collapsed'); i++) {
      await new Promise(r => setTimeout(r, 20));
      await view.ready;
    }
    const node = view.left.nodeEls.get(`v0:${target}`)!;
    expect(node.classList.contains('jp-Kernelcore-var')).toBe(true);
    const crumbs = [...el.querySelectorAll('.jp-Kernelcore-crumbs .jp-Kernelcore-crumb')].map(c => c.textContent);
    expect(crumbs[0]).toBe('block 0');
    expect(crumbs).toContain('forward');
    expect(crumbs).toContain('fc_7');
    view.dispose();
  });
});

describe('details side panel', () => {
  it('names producers and consumers as links that select them', async () => {
    const el = container();
    const m = new FakeModel({ program: MLP, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(m as never, el, { local: true });
    await view.ready;
    const mul = MLP.blocks[0].ops.find(o => o.type === 'mul_grad')!;
    view.select(mul.id);
    const panel = el.querySelector('.jp-Kernelcore-graphBody > .jp-Kernelcore-details')!;
    expect(panel.textContent).toContain('mul_grad');
    expect(panel.textContent).toContain('differentiates');
    const links = [...panel.querySelectorAll('button.jp-Kernelcore-link')];
    const fwd = links.find(b => b.getAttribute('title') === mul.forward)!;
    expect(fwd).toBeDefined();
    // a read variable: its link selects it, and its panel lists who writes and reads it
    const wname = mul.inputs!.Y[0];
    const w = links.find(b => b.textContent === wname)!;
    w.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(m.get('selected')).toBe(`v0:${wname}`);
    const panel2 = el.querySelector('.jp-Kernelcore-graphBody > .jp-Kernelcore-details')!;
    expect(panel2.textContent).toMatch(/produced by \(1\)/); // the sgd that updates it
    expect(panel2.textContent).toMatch(/consumed by \(3\)/); // mul, mul_grad, sgd
    const readers = [...panel2.querySelectorAll('button.jp-Kernelcore-link')].map(b => b.getAttribute('title'));
    expect(readers).toContain(mul.id);
    await view.ready;
    view.dispose();
  });
});

describe('minimap', () => {
  it('appears when part of the drawing is out of view and outlines the view', async () => {
    const el = container();
    const m = new FakeModel({ program: MLP, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(m as never, el, { local: true });
    await view.ready;
    await new Promise(r => setTimeout(r, 100)); // the overview is built in a task after the first paint
    const mini = view.left.minimap;
    expect(mini.classList.contains('jp-Kernelcore-hidden')).toBe(true); // all in view
    // the copy holds no node the view's own queries could mistake for the drawing's
    expect(mini.querySelectorAll('g.node, svg.jp-Kernelcore-svg, [id]').length).toBe(0);
    view.left.zoom(0.5);
    expect(mini.classList.contains('jp-Kernelcore-hidden')).toBe(false);
    const rect = mini.querySelector('rect.jp-Kernelcore-miniView')!;
    expect(Number(rect.getAttribute('width'))).toBeCloseTo(view.left.viewBox!.w);
    view.dispose();
  });
});

describe('backward -> forward', () => {
  it('a selected backward op marks the forward op it differentiates', async () => {
    const el = container();
    const m = new FakeModel({ program: MLP, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
    const view = new ProgramGraphView(m as never, el, { local: true });
    await view.ready;
    const g = view.graph!;
    const grad = MLP.blocks[0].ops.find(o => o.type === 'relu_grad')!;
    // open both ends
    view.reveal(grad.forward!);
    await view.ready;
    view.reveal(grad.id);
    await view.ready;
    view.select(grad.id);
    const fwdEl = view.left.nodeEls.get(grad.forward!)!;
    expect(g.nodes.get(g.byId.get(grad.forward!)!)!.op!.type).toBe('relu');
    expect(fwdEl.classList.contains('jp-Kernelcore-twin')).toBe(true);
    expect(view.left.nodeEls.get(grad.id)!.classList.contains('jp-Kernelcore-selected')).toBe(true);
    view.dispose();
  });
});
