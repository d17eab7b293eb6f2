import { afterEach, describe, expect, it } from 'vitest';
import { ProgramGraphView } from '../src/views/ProgramGraph';
import { graphKeyAction, PAN_STEP, PAN_STEP_LARGE, ZOOM_STEP } from '../src/graphkeys';
import { ExportError, exportFocusedGraph, exportName, hasFocusedGraph, trackGraphFocus, pngScale, PNG_MAX_SIDE, PNG_SCALE, programName, serializeGraph, NAME_ATTRIBUTE } from '../src/graphexport';
import { withSubBlock, mlp } from './fixtures';
import { container, FakeModel } from './fake-model';

function model(program: unknown, extra: Record<string, unknown> = {}) {
  return new FakeModel({ program, pruned_program: null, selected: '', details: {}, search: '', collapsed: [], ...extra });
}

const key = (k: string, mods: Partial<KeyboardEventInit> = {}) => ({ key: k, ctrlKey: false, altKey: false, metaKey: false, shiftKey: false, ...mods });

/** Press `k` with the focus on `target`; whether the page's default (and JupyterLab's shortcut) was prevented. */
function press(target: Element, k: string, mods: Partial<KeyboardEventInit> = {}): boolean {
  const ev = new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true, ...mods });
  target.dispatchEvent(ev);
  return ev.defaultPrevented;
}

afterEach(() => {
  document.body.textContent = '';
});

describe('the graph key table', () => {
  it('maps arrows, + / −, 0, f, /, Enter and Escape', () => {
    expect(graphKeyAction(key('ArrowRight'))).toEqual({ kind: 'pan', dx: PAN_STEP, dy: 0 });
    expect(graphKeyAction(key('ArrowUp'))).toEqual({ kind: 'pan', dx: 0, dy: -PAN_STEP });
    expect(graphKeyAction(key('ArrowDown', { shiftKey: true }))).toEqual({ kind: 'pan', dx: 0, dy: PAN_STEP_LARGE });
    for (const k of ['+', '=']) {
      expect(graphKeyAction(key(k, { shiftKey: k === '+' }))).toEqual({ kind: 'zoom', factor: ZOOM_STEP });
    }
    expect(graphKeyAction(key('-'))).toEqual({ kind: 'zoom', factor: 1 / ZOOM_STEP });
    expect(graphKeyAction(key('0'))?.kind).toBe('reset');
    expect(graphKeyAction(key('f'))?.kind).toBe('fit');
    expect(graphKeyAction(key('/'))?.kind).toBe('search');
    expect(graphKeyAction(key('Enter'))?.kind).toBe('toggle');
    expect(graphKeyAction(key('Escape'))?.kind).toBe('clear');
  });

  it('leaves modified keys, function keys and other letters to the page (Ctrl+F, F10, Ctrl+0)', () => {
    expect(graphKeyAction(key('f', { ctrlKey: true }))).toBeNull();
    expect(graphKeyAction(key('f', { metaKey: true }))).toBeNull();
    expect(graphKeyAction(key('0', { ctrlKey: true }))).toBeNull();
    expect(graphKeyAction(key('ArrowLeft', { altKey: true }))).toBeNull();
    for (const k of ['F10', 'F11', 'a', 'b', 'd', ' ', 'Tab']) {
      expect(graphKeyAction(key(k))).toBeNull();
    }
  });
});

describe('keys in a focused graph (real Graphviz WASM)', () => {
  it('pan, zoom and fit the view; other keys and other targets pass through', async () => {
    const view = new ProgramGraphView(model(mlp()), container());
    await view.ready;
    const pane = view.left;
    const b0 = pane.viewBox!;
    expect(press(pane.canvas, 'ArrowRight')).toBe(true);
    expect(pane.viewBox!.x).toBeCloseTo(b0.x + PAN_STEP * b0.w);
    press(pane.canvas, 'ArrowDown', { shiftKey: true });
    expect(pane.viewBox!.y).toBeCloseTo(b0.y + PAN_STEP_LARGE * b0.h);
    press(pane.canvas, '+');
    expect(pane.viewBox!.w).toBeCloseTo(b0.w * ZOOM_STEP);
    press(pane.canvas, '0');
    expect(pane.viewBox!.w).toBeCloseTo(b0.w); // the opening scale (an unmeasured canvas: the whole drawing)
    // not the graph's: nothing moves and the key goes on to JupyterLab
    const before = pane.viewBox;
    expect(press(pane.canvas, 'f', { ctrlKey: true })).toBe(false);
    expect(press(pane.canvas, 'F10')).toBe(false);
    expect(press(document.body, 'ArrowRight')).toBe(false);
    expect(press(view.root.querySelector('.jp-Kernelcore-search')!, '+')).toBe(false);
    expect(pane.viewBox).toEqual(before);
    view.dispose();
  });

  it('"/" focuses the search box and Escape there comes back; Escape in the graph clears the search and the selection', async () => {
    const m = model(mlp());
    const view = new ProgramGraphView(m, container());
    await view.ready;
    const search = view.root.querySelector('.jp-Kernelcore-search') as HTMLInputElement;
    expect(press(view.left.canvas, '/')).toBe(true);
    expect(document.activeElement).toBe(search);
    press(search, 'Escape');
    expect(document.activeElement).toBe(view.left.canvas); // back to the graph's keys
    search.value = 'relu';
    search.dispatchEvent(new Event('input'));
    view.select('o0:1');
    expect(m.get('selected')).toBe('o0:1');
    press(view.left.canvas, 'Escape');
    expect(search.value).toBe('');
    expect(m.get('selected')).toBe('');
    view.dispose();
  });

  it('Enter folds the group holding the selected node, and opens it again', async () => {
    const m = model(withSubBlock());
    const view = new ProgramGraphView(m, container());
    await view.ready;
    view.select('o1:0');
    expect(m.get('selected')).toBe('o1:0');
    press(view.left.canvas, 'Enter');
    expect(m.get('collapsed')).toEqual(['cluster_1']);
    await view.ready;
    press(view.left.canvas, 'Enter');
    expect(m.get('collapsed')).toEqual([]);
    view.dispose();
  });
});

describe('export', () => {
  it('serializes the whole drawing, whatever is in view, with the theme resolved into inline styles', async () => {
    const style = document.createElement('style');
    style.textContent = '.jp-Kernelcore-svg text { fill: rgb(1, 2, 3); font-size: 10px; }';
    document.head.appendChild(style);
    const view = new ProgramGraphView(model(mlp()), container());
    await view.ready;
    const pane = view.left;
    pane.zoom(0.25); // the view shows a quarter of it
    const whole = pane.wholeBox!;
    const text = serializeGraph(pane.svg!, whole, 'rgb(9, 9, 9)');
    style.remove();
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const svg = doc.documentElement;
    expect(svg.nodeName).toBe('svg');
    expect(doc.querySelector('parsererror')).toBeNull();
    expect(svg.getAttribute('viewBox')).toBe(`${whole.x} ${whole.y} ${whole.w} ${whole.h}`);
    expect(Number(svg.getAttribute('width'))).toBe(Math.ceil(whole.w));
    expect(svg.firstElementChild!.getAttribute('fill')).toBe('rgb(9, 9, 9)');
    const labels = [...svg.querySelectorAll('g.node text')].map(t => t.textContent);
    for (const t of pane.svg!.querySelectorAll('g.node text')) {
      expect(labels).toContain(t.textContent);
    }
    expect(svg.querySelector('g.node text')!.getAttribute('style')).toContain('fill:rgb(1, 2, 3)');
    expect(pane.svg!.querySelector('g.node text')!.getAttribute('style')).toBeNull(); // the drawing itself is untouched
    view.dispose();
  });

  it('draws a PNG at 2x, less past what a canvas takes (and says so), and refuses an unreadable one', () => {
    expect(pngScale(800, 600)).toEqual({ scale: PNG_SCALE, note: null });
    const capped = pngScale(20_000, 400);
    expect(capped.scale).toBeCloseTo(PNG_MAX_SIDE / 20_000);
    expect(capped.note).toMatch(/^PNG drawn at 0\.82x \(16384 x 327 px\)/);
    const tall = pngScale(6000, 6000);
    expect(6000 * tall.scale * 6000 * tall.scale).toBeLessThanOrEqual(64 * 1024 * 1024 + 1);
    expect(() => pngScale(200_000, 1000)).toThrow(ExportError);
    expect(() => pngScale(0, 0)).toThrow(ExportError);
  });

  it('names the file after the program', () => {
    expect(exportName('models/resnet18.pdmodel')).toBe('resnet18');
    expect(exportName('../../a b<c>.json')).toBe('a_b_c_');
    expect(exportName('')).toBe('program');
    const host = container();
    host.setAttribute(NAME_ATTRIBUTE, 'densenet121.pdmodel');
    const inner = host.appendChild(document.createElement('div'));
    expect(programName(inner, 5)).toBe('densenet121.pdmodel');
    expect(programName(document.createElement('div'), 5)).toBe('program_5ops');
  });
});

describe('the palette export commands', () => {
  it('act on the graph that last had the focus, while it is on the page', async () => {
    trackGraphFocus();
    const a = new ProgramGraphView(model(mlp()), container());
    const b = new ProgramGraphView(model(withSubBlock()), container());
    await Promise.all([a.ready, b.ready]);
    const clicked: string[] = [];
    for (const [name, view] of [['a', a], ['b', b]] as const) {
      view.root.querySelectorAll('button').forEach(btn => btn.addEventListener('click', () => clicked.push(`${name} ${btn.textContent}`), true));
    }
    b.left.canvas.focus();
    expect(hasFocusedGraph()).toBe(true);
    exportFocusedGraph('png');
    a.left.canvas.focus();
    exportFocusedGraph('svg');
    expect(clicked).toEqual(['b Export PNG', 'a Export SVG']);
    a.dispose();
    a.root.remove();
    expect(hasFocusedGraph()).toBe(false); // that view is gone: nothing to export
    b.dispose();
  });
});
