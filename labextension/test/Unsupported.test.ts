import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import ProgramGraphWidget from '../src/views/ProgramGraph';
import { localDetails } from '../src/details';
import { ProgramGraphModel, UNSUPPORTED_CLASS, UNSUPPORTED_COLOR, UNSUPPORTED_TEXT } from '../src/graph';
import { isProgramJSON, ProgramJSON } from '../src/schema';
import { mlp } from './fixtures';
import { container, FakeModel, texts } from './fake-model';

/** ProgramJSON written by Python (tests/test_unsupported_ops.py keeps this file equal to its output). */
function fromPython(): ProgramJSON {
  return JSON.parse(readFileSync(join(__dirname, 'unsupported-program.json'), 'utf8')) as ProgramJSON;
}

/** The DOT line of the node drawn for program id `id`. */
function dotLine(g: ProgramGraphModel, dot: string, id: string): string {
  const key = g.byId.get(id)!;
  const line = dot.split('\n').find(l => l.trim().startsWith(`${key} [`));
  if (!line) {
    throw new Error(`no DOT node for ${id}`);
  }
  return line;
}

afterEach(() => {
  document.body.textContent = '';
});

describe('ops kernelcore has no kernel for', () => {
  it('the fixture is a ProgramJSON with unsupported ops flagged by Python', () => {
    const p = fromPython();
    expect(isProgramJSON(p)).toBe(true);
    const flagged = p.blocks.flatMap(b => b.ops.filter(o => o.unsupported === true).map(o => o.id));
    expect(flagged).toEqual(['o0:1', 'o0:2', 'o0:3', 'o0:4', 'o1:0']);
  });

  it('are classed, labelled and drawn with a red dashed border; supported ops are not', () => {
    const g = new ProgramGraphModel(fromPython());
    const roi = g.nodes.get(g.byId.get('o0:1')!)!;
    expect(roi.classes).toContain(UNSUPPORTED_CLASS);
    expect(roi.label).toEqual(['psroi_pool', UNSUPPORTED_TEXT]);
    const relu = g.nodes.get(g.byId.get('o0:0')!)!;
    expect(relu.classes).not.toContain(UNSUPPORTED_CLASS);
    const dot = g.toDot(new Set(), 'p_');
    const bad = dotLine(g, dot, 'o0:1');
    expect(bad).toContain(`color="${UNSUPPORTED_COLOR}"`);
    expect(bad).toMatch(/style="[^"]*dashed/);
    const good = dotLine(g, dot, 'o0:0');
    expect(good).not.toContain(UNSUPPORTED_COLOR);
    expect(good).not.toContain('dashed');
  });

  it('a ProgramJSON without the field (older Python) draws every op as supported', () => {
    const g = new ProgramGraphModel(mlp());
    for (const n of g.nodes.values()) {
      expect(n.classes).not.toContain(UNSUPPORTED_CLASS);
    }
  });

  it('render in the SVG with a tooltip, a legend entry and a details line', async () => {
    const el = container();
    const m = new FakeModel({ program: fromPython(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
    const cleanup = await ProgramGraphWidget.render({ model: m, el });
    const nodes = el.querySelectorAll(`svg g.node.${UNSUPPORTED_CLASS}`);
    expect(nodes.length).toBe(5);
    const titles = Array.from(nodes).map(n => n.querySelector('title')?.textContent);
    expect(titles).toContain(`psroi_pool: ${UNSUPPORTED_TEXT}`);
    expect(el.querySelector(`.jp-Kernelcore-legend .jp-Kernelcore-swatch.${UNSUPPORTED_CLASS}`)).not.toBeNull();
    expect(texts(el)).toContain(UNSUPPORTED_TEXT);
    cleanup();
  });

  it('the local details say there is no kernel', () => {
    const g = new ProgramGraphModel(fromPython());
    expect(localDetails(g, 'o0:2')?.kernel).toBe(UNSUPPORTED_TEXT);
    expect(localDetails(g, 'o0:0')?.kernel).toBeUndefined();
  });
});
