import { afterEach, describe, expect, it } from 'vitest';
import ScopeForestWidget, { ScopeForestView } from '../src/views/ScopeForest';
import { forest, HOSTILE, PREVIEW_1D, PREVIEW_2D } from './fixtures';
import { container, FakeModel, texts } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

function varLine(el: Element, name: string, scopeLabelPart?: string): HTMLElement {
  const scopes = [...el.querySelectorAll('.jp-Kernelcore-scope')].filter(s => !scopeLabelPart || s.querySelector('.jp-Kernelcore-scopeLabel')!.textContent!.includes(scopeLabelPart));
  for (const s of scopes) {
    const line = [...s.querySelectorAll(':scope > .jp-Kernelcore-scopeBody > .jp-Kernelcore-var .jp-Kernelcore-varLine')].find(l => l.querySelector('.jp-Kernelcore-varName')!.textContent === name);
    if (line) {
      return line as HTMLElement;
    }
  }
  throw new Error(`no var ${name}`);
}

describe('ScopeForest', () => {
  it('draws the scope tree with variables', () => {
    const el = container();
    const m = new FakeModel({ forest: forest(), opened: {} });
    const cleanup = ScopeForestWidget.render({ model: m, el });
    const labels = [...el.querySelectorAll('.jp-Kernelcore-scopeLabel')].map(e => e.textContent);
    expect(labels).toEqual(['scope 1', 'scope 2: recurrent step t=0 (block 0, op #0 recurrent)', 'scope 3: recurrent step t=1 (block 0, op #0 recurrent)']);
    expect(texts(el)).toContain('  float32[5, 3] on CPUPlace');
    expect(texts(el)).toContain('  step scopes [2, 3]');
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('sends open for a tensor and shows the ValuePreview Python returns', () => {
    const el = container();
    const m = new FakeModel({ forest: forest(), opened: {} });
    const view = new ScopeForestView(m, el);
    varLine(el, 'x').click();
    expect(m.sent).toEqual([{ type: 'open', scope: 1, name: 'x' }]);
    expect(texts(el)).toContain('loading\u2026');
    m.pythonSets('opened', { '1:x': PREVIEW_2D });
    const canvas = el.querySelector('canvas.jp-Kernelcore-heatmap') as HTMLCanvasElement;
    expect(canvas).not.toBeNull();
    expect(canvas.width).toBeGreaterThan(0);
    expect(el.querySelector('.jp-Kernelcore-bad')!.textContent).toBe('NaN 1'); // NaN count flagged
    expect(texts(el)).toContain('float32[2, 3] on CPUPlace');
    // a second open of an already-open variable closes it without a message
    varLine(el, 'x').click();
    expect(el.querySelector('canvas')).toBeNull();
    expect(m.sent.length).toBe(1);
    // a sparkline for a vector, in a kid scope
    varLine(el, 'h', 't=1').click();
    expect(m.sent.at(-1)).toEqual({ type: 'open', scope: 3, name: 'h' });
    m.pythonSets('opened', { '3:h': PREVIEW_1D });
    expect(el.querySelector('canvas.jp-Kernelcore-sparkline')).not.toBeNull();
    view.dispose();
  });

  it('folds scopes and reveals a scope', () => {
    const el = container();
    const view = new ScopeForestView(new FakeModel({ forest: forest(), opened: {} }), el);
    const head = el.querySelector('.jp-Kernelcore-scopeHead') as HTMLElement;
    head.click();
    expect(el.querySelectorAll('.jp-Kernelcore-scope').length).toBe(1);
    view.reveal(3);
    expect(el.querySelectorAll('.jp-Kernelcore-scope').length).toBe(3);
    expect(el.querySelector('.jp-Kernelcore-highlight')!.textContent).toContain('scope 3');
    view.dispose();
  });

  it('shows hostile names verbatim and makes no element of them', () => {
    const el = container();
    const m = new FakeModel({ forest: forest(), opened: {} });
    const view = new ScopeForestView(m, el);
    expect(texts(el)).toContain(HOSTILE);
    expect(el.querySelector('img, script')).toBeNull();
    varLine(el, HOSTILE).click();
    expect(m.sent.at(-1)).toEqual({ type: 'open', scope: 1, name: HOSTILE });
    m.pythonSets('opened', { [`1:${HOSTILE}`]: { ...PREVIEW_1D, dtype: HOSTILE, place: HOSTILE } });
    expect(el.querySelector('img, script')).toBeNull();
    expect(texts(el).some(t => t.includes(HOSTILE))).toBe(true);
    view.dispose();
  });

  it('pages very wide scopes', () => {
    const el = container();
    const kids = Array.from({ length: 250 }, (_, i) => i + 2);
    const f = {
      schema: 'kernelcore.scope_forest',
      version: 1,
      roots: [1],
      scopes: [
        { id: 1, parent: null, depth: 0, origin: {}, kids, vars: [] },
        ...kids.map(k => ({ id: k, parent: 1, depth: 1, origin: { what: 'while iteration', timestep: k - 2 }, kids: [], vars: [] }))
      ]
    };
    const view = new ScopeForestView(new FakeModel({ forest: f, opened: {} }), el);
    expect(el.querySelectorAll('.jp-Kernelcore-scope').length).toBe(101);
    (el.querySelector('.jp-Kernelcore-scopeBody > .jp-Kernelcore-button') as HTMLElement).click();
    expect(el.querySelectorAll('.jp-Kernelcore-scope').length).toBe(201);
    view.dispose();
  });
});
