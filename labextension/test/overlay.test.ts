import { afterEach, describe, expect, it } from 'vitest';
import { ProgramGraphView } from '../src/views/ProgramGraph';
import { ProgramGraphModel } from '../src/graph';
import { aggregate, along, BANDS, clusterValues, colorFor, formatValue, GRADIENT, NONFINITE, parseOverlay, textOn } from '../src/overlay';
import { mlp, withSubBlock } from './fixtures';
import { container, FakeModel, texts } from './fake-model';

function spec(values: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { on: 'ops', label: 'max abs err', scale: 'gradient', colors: [], aggregate: 'max', values, ...extra };
}

function model(program: unknown, overlay: unknown = {}, extra: Record<string, unknown> = {}) {
  return new FakeModel({ program, pruned_program: null, selected: '', details: {}, search: '', collapsed: [], overlay_spec: overlay, ...extra });
}

/** The fill a node's shape was given, and its text's (as hex, '' for none). */
function fills(el: Element): { shape: string; text: string } {
  const shape = el.querySelector(':scope > polygon, :scope > path, :scope > ellipse') as SVGElement;
  const text = el.querySelector('text') as SVGElement;
  const hex = (css: string) => {
    const m = css.match(/^rgb\((\d+), (\d+), (\d+)\)$/);
    return m ? '#' + m.slice(1).map(c => Number(c).toString(16).padStart(2, '0')).join('') : css;
  };
  return { shape: hex(shape.style.getPropertyValue('fill')), text: hex(text.style.getPropertyValue('fill')) };
}

function contrast(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16) / 255).map(s => (s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

afterEach(() => {
  document.body.textContent = '';
});

describe('overlay colours', () => {
  it('reads non-finite values from their strings and takes nothing that is not an overlay', () => {
    const o = parseOverlay(spec({ 'o0:0': 1, 'o0:1': 'NaN', 'o0:2': 'Infinity', 'o0:3': '-Infinity', 'o0:4': 'junk' }))!;
    expect([...o.values.entries()]).toEqual([['o0:0', 1], ['o0:1', NaN], ['o0:2', Infinity], ['o0:3', -Infinity]]);
    expect(parseOverlay({})).toBeNull();
    expect(parseOverlay(null)).toBeNull();
    expect(parseOverlay(spec({}, { colors: ['red', '#00ff00', 'url(x)'] }))!.colors).toEqual(['#00ff00']);
  });

  it('spans the gradient from the smallest to the largest finite value, linear or log', () => {
    const o = parseOverlay(spec({ a: 1, b: 10, c: 100, d: 'NaN' }))!;
    expect(colorFor(o, 1)).toBe(GRADIENT[0]);
    expect(colorFor(o, 100)).toBe(GRADIENT[GRADIENT.length - 1]);
    expect(colorFor(o, NaN)).toBe(NONFINITE.nan);
    expect(colorFor(o, Infinity)).toBe(NONFINITE.posInf);
    expect(colorFor(o, -Infinity)).toBe(NONFINITE.negInf);
    const log = parseOverlay(spec({ a: 1, b: 10, c: 100, z: 0 }, { scale: 'log' }))!;
    expect(colorFor(log, 10)).toBe(along(GRADIENT, 0.5)); // a decade up of two
    expect(colorFor(log, 0)).toBe(GRADIENT[0]); // no log of 0: the lowest colour
    expect(colorFor(o, 10)).toBe(along(GRADIENT, 9 / 99));
  });

  it('gives NaN and Infinity colours far from any the scales give (a +Inf is not just the hottest value)', () => {
    const rgbOf = (hex: string) => [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
    const distance = (a: string, b: string) => Math.hypot(...rgbOf(a).map((x, i) => x - rgbOf(b)[i]));
    const scaleColors = Array.from({ length: 21 }, (_, k) => [along(GRADIENT, k / 20), along(BANDS, k / 20)]).flat();
    const special = Object.values(NONFINITE);
    for (const c of special) {
      expect(Math.min(...scaleColors.map(s => distance(c, s)))).toBeGreaterThan(80);
      expect(Math.min(...special.filter(o => o !== c).map(o => distance(c, o)))).toBeGreaterThan(80);
    }
  });

  it('puts a value in the band its thresholds cut, in the given colours or the palette', () => {
    const o = parseOverlay(spec({ a: 0 }, { scale: [1, 10], colors: ['#000000', '#777777', '#ffffff'] }))!;
    expect([0.5, 1, 9.9, 10, 1e9].map(x => colorFor(o, x))).toEqual(['#000000', '#777777', '#777777', '#ffffff', '#ffffff']);
    const p = parseOverlay(spec({ a: 0 }, { scale: [1] }))!;
    expect([colorFor(p, 0), colorFor(p, 2)]).toEqual([BANDS[0], BANDS[BANDS.length - 1]]);
  });

  it('writes black or white on a fill, whichever reads (WCAG AA contrast on every colour it can give)', () => {
    const fillsUsed = [...GRADIENT, ...BANDS, ...Object.values(NONFINITE)];
    for (let t = 0; t <= 1; t += 0.05) {
      fillsUsed.push(along(GRADIENT, t), along(BANDS, t));
    }
    for (const f of fillsUsed) {
      expect(contrast(f, textOn(f))).toBeGreaterThanOrEqual(4.5);
    }
    expect(textOn(GRADIENT[0])).toBe('#000000');
    expect(textOn(GRADIENT[GRADIENT.length - 1])).toBe('#ffffff');
  });

  it('aggregates max, min and mean, and a NaN member makes the aggregate NaN', () => {
    expect([aggregate([1, 5, 3], 'max'), aggregate([1, 5, 3], 'min'), aggregate([1, 5, 3], 'mean')]).toEqual([5, 1, 3]);
    expect(aggregate([1, NaN], 'min')).toBeNaN();
    expect(aggregate([1, Infinity], 'max')).toBe(Infinity);
    expect([formatValue(NaN), formatValue(0.5), formatValue(1.23456e-7)]).toEqual(['NaN', '0.5', '1.23e-7']);
  });

  it('gives a sub-block cluster the aggregate of the values inside it, and a group value from Python wins', () => {
    const g = new ProgramGraphModel(withSubBlock());
    const o = parseOverlay(spec({ 'o0:0': 9, 'o1:0': 2, 'o1:1': 4 }, { aggregate: 'mean', groups: { g7: { value: 'NaN', count: 3 } } }))!;
    const c = clusterValues(g, o);
    expect(c.get('cluster_1')).toEqual({ value: 3, count: 2 });
    expect(c.get('g7')!.value).toBeNaN();
    const vars = parseOverlay(spec({ 'o1:0': 2 }, { on: 'vars' }))!;
    expect(clusterValues(g, vars).size).toBe(0); // an op's value in a vars overlay colours nothing
  });
});

describe('overlay on the ProgramGraph view (real Graphviz WASM)', () => {
  it('fills the nodes with values, says the value in the tooltip and details, and draws a legend', async () => {
    const el = container();
    const m = model(mlp(), spec({ 'o0:0': 1, 'o0:1': 100, 'o0:2': 'NaN' }));
    const view = new ProgramGraphView(m, el, { local: true });
    await view.ready;
    const node = (id: string) => view.left.nodeEls.get(id)!;
    expect(fills(node('o0:0'))).toEqual({ shape: GRADIENT[0], text: '#000000' });
    expect(fills(node('o0:1')).shape).toBe(GRADIENT[GRADIENT.length - 1]);
    expect(fills(node('o0:2'))).toEqual({ shape: NONFINITE.nan, text: textOn(NONFINITE.nan) });
    expect(fills(node('o0:3'))).toEqual({ shape: '', text: '' }); // no value: its own colours
    expect(node('o0:2').querySelector('title')!.textContent).toContain('max abs err: NaN');
    const legend = el.querySelector('.jp-Kernelcore-overlayLegend')!;
    expect(texts(legend)).toContain('max abs err');
    expect(texts(legend)).toContain('NaN');
    expect(legend.querySelector('.jp-Kernelcore-overlayMax')!.textContent).toBe('100');
    view.select('o0:1');
    expect(texts(el.querySelector('.jp-Kernelcore-details')!)).toContain('max abs err');
    expect(texts(el.querySelector('.jp-Kernelcore-details')!)).toContain('100');
    m.set('overlay_spec', {});
    expect(fills(node('o0:0'))).toEqual({ shape: '', text: '' });
    expect(node('o0:2').querySelector('title')!.textContent).not.toContain('max abs err');
    expect(el.querySelector('.jp-Kernelcore-overlayLegend')).toBeNull();
    view.dispose();
  });

  it('keeps the colours across a re-render, and a folded sub-block shows the aggregate of its ops', async () => {
    const el = container();
    const m = model(withSubBlock(), spec({ 'o0:0': 1, 'o1:0': 2, 'o1:1': 'NaN' }, { aggregate: 'max' }));
    const view = new ProgramGraphView(m, el, { local: true });
    await view.ready;
    expect(fills(view.left.nodeEls.get('o1:0')!).shape).toBe(GRADIENT[GRADIENT.length - 1]);
    m.set('collapsed', ['cluster_1']);
    await view.ready;
    const folded = view.left.clusterEls.get('cluster_1')!;
    expect(fills(folded).shape).toBe(NONFINITE.nan);
    expect(folded.querySelector('title')!.textContent).toContain('max abs err: NaN, the max of 2 ops inside (a member is NaN)');
    m.set('overlay_spec', spec({ 'o1:0': 2, 'o1:1': 4 }, { aggregate: 'min' }));
    expect(fills(folded).shape).toBe(GRADIENT[0]); // the min 2, the lowest value
    expect(folded.querySelector('title')!.textContent).toContain('the min of 2 ops');
    view.dispose();
  });

  it('says on a log scale where values of 0 or less went', async () => {
    const el = container();
    const m = model(mlp(), spec({ 'o0:0': 0, 'o0:1': 100 }, { scale: 'log' }));
    const view = new ProgramGraphView(m, el, { local: true });
    await view.ready;
    expect(el.querySelector('.jp-Kernelcore-overlayLegend')!.textContent).toContain('values \u2264 0 take the lowest colour');
    m.set('overlay_spec', spec({ 'o0:0': 1, 'o0:1': 100 }, { scale: 'log' }));
    expect(el.querySelector('.jp-Kernelcore-overlayLegend')!.textContent).not.toContain('\u2264 0');
    view.dispose();
  });

  it('colours variables by name id in a vars overlay', async () => {
    const el = container();
    const view = new ProgramGraphView(model(mlp(), spec({ 'v0:w': 5, 'v0:h': 1 }, { on: 'vars', scale: [2] })), el, { local: true });
    await view.ready;
    expect(fills(view.left.nodeEls.get('v0:w')!).shape).toBe(BANDS[BANDS.length - 1]);
    expect(fills(view.left.nodeEls.get('v0:h')!).shape).toBe(BANDS[0]);
    expect(texts(el.querySelector('.jp-Kernelcore-overlayLegend')!)).toContain('\u2265 2');
    view.dispose();
  });
});

describe('overlay of a big program', () => {
  it('takes the range and aggregates of 200 000 values (no argument spreading)', () => {
    const values: Record<string, number> = {};
    for (let i = 0; i < 200_000; i++) {
      values[`o0:${i}`] = i;
    }
    const o = parseOverlay(spec(values))!;
    expect([o.lo, o.hi]).toEqual([0, 199_999]);
    const xs = [...o.values.values()];
    expect([aggregate(xs, 'max'), aggregate(xs, 'min')]).toEqual([199_999, 0]);
  });
});
