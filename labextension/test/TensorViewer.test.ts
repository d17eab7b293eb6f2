import { afterEach, describe, expect, it } from 'vitest';
import TensorViewerWidget, { cellColor, cellUnderPointer, glyph, TensorViewerView } from '../src/views/TensorViewer';
import { container, FakeModel } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

function state(extra: Record<string, unknown> = {}) {
  return {
    name: 'h',
    shape: [2, 3, 4],
    dtype: 'float32',
    place: 'CPUPlace',
    axes: [1, 2],
    index: [0, 0, 0],
    diff: false,
    has_previous: true,
    slice: { rows: 3, cols: 4, row_step: 1, col_step: 1, data: [[0, 1, 2, 3], [4, 'NaN', 6, 7], [8, 9, 'Infinity', '-Infinity']], min: 0, max: 9 },
    health: { negative: 0, zero: 1, positive: 8, nan: 1, pos_inf: 1, neg_inf: 1, total: 12 },
    status: 'value: axes 1 x 2',
    ...extra
  };
}

describe('TensorViewer', () => {
  it('draws the header, value classes, axis pickers and a slider per other axis', () => {
    const el = container();
    const m = new FakeModel(state());
    const cleanup = TensorViewerWidget.render({ model: m, el });
    expect(el.querySelector('.jp-Kernelcore-tvHead')!.textContent).toBe('h float32[2, 3, 4] on CPUPlace');
    const counts = [...el.querySelectorAll('.jp-Kernelcore-tvCount')].map(e => e.textContent);
    expect(counts).toEqual(['negative 0', 'zero 1', 'positive 8', 'NaN 1', '+Inf 1', '-Inf 1']);
    expect(el.querySelectorAll('.jp-Kernelcore-tvClass').length).toBe(5); // the empty class draws no segment
    const sliders = [...el.querySelectorAll('input.jp-Kernelcore-tvSlider')] as HTMLInputElement[];
    expect(sliders.map(s => s.dataset.axis)).toEqual(['0']);
    expect(sliders[0].max).toBe('1');
    expect(el.querySelector('.jp-Kernelcore-tvDiff')).not.toBeNull();
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('asks Python for another slice, other axes and the diff', () => {
    const el = container();
    const m = new FakeModel(state());
    new TensorViewerView(m, el);
    const slider = el.querySelector('input.jp-Kernelcore-tvSlider') as HTMLInputElement;
    slider.value = '1';
    slider.dispatchEvent(new Event('change'));
    expect(m.sent.at(-1)).toEqual({ type: 'view', axes: [1, 2], index: [1, 0, 0], diff: false });
    const rows = el.querySelector('.jp-Kernelcore-tvAxis-rows') as HTMLSelectElement;
    rows.value = '2';
    rows.dispatchEvent(new Event('change'));
    expect(m.sent.at(-1)).toEqual({ type: 'view', axes: [2, 1], index: [0, 0, 0], diff: false }); // swapped, not doubled
    const diff = el.querySelector('.jp-Kernelcore-tvDiff') as HTMLInputElement;
    diff.checked = true;
    diff.dispatchEvent(new Event('change'));
    expect(m.sent.at(-1)).toMatchObject({ type: 'view', diff: true });
  });

  it('names cells by the tensor index and sends values to the notebook', () => {
    const el = container();
    const m = new FakeModel(state({ index: [1, 0, 0], slice: { ...state().slice, row_step: 2 } }));
    const view = new TensorViewerView(m, el);
    expect(view.describeCell(1, 2)).toBe('[1, 2, 2] = 6');
    expect(view.describeCell(1, 1)).toBe('[1, 2, 1] = NaN');
    (el.querySelector('.jp-Kernelcore-tvSendName') as HTMLInputElement).value = 'h_t1';
    (el.querySelector('.jp-Kernelcore-tvSendSlice') as HTMLButtonElement).click();
    expect(m.sent.at(-1)).toEqual({ type: 'send', name: 'h_t1', what: 'slice' });
  });

  it('names the cell under the pointer on a canvas CSS has stretched', () => {
    const el = container();
    const m = new FakeModel(state({ shape: [2, 4], axes: [0, 1], index: [0, 0], slice: { rows: 2, cols: 4, row_step: 1, col_step: 1, data: [[0, 1, 2, 3], [4, 5, 6, 7]], min: 0, max: 7 } }));
    new TensorViewerView(m, el);
    const canvas = el.querySelector('canvas') as HTMLCanvasElement;
    // drawn 96x48 px (24 px cells), shown 400x200 px on screen: each cell is 100 px wide there
    canvas.getBoundingClientRect = () => ({ left: 10, top: 20, width: 400, height: 200, right: 410, bottom: 220, x: 10, y: 20, toJSON: () => ({}) });
    const readout = el.querySelector('.jp-Kernelcore-tvCell')!;
    const hoverAt = (x: number, y: number) => {
      canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y }));
      return readout.textContent;
    };
    expect(hoverAt(10 + 350, 20 + 150)).toBe('[1, 3] = 7'); // bottom-right, not past the edge of the unstretched grid
    expect(hoverAt(10 + 30, 20 + 30)).toBe('[0, 0] = 0'); // still the first cell 30 px in (was [1, 1])
    expect(hoverAt(10 + 150, 20 + 50)).toBe('[0, 1] = 1');
  });

  it('finds no cell outside the canvas or on an empty one', () => {
    const rect = { left: 0, top: 0, width: 100, height: 50 };
    expect(cellUnderPointer(rect, 99, 49, 2, 4)).toEqual([1, 3]);
    expect(cellUnderPointer(rect, 100, 10, 2, 4)).toBeNull();
    expect(cellUnderPointer(rect, -1, 10, 2, 4)).toBeNull();
    expect(cellUnderPointer({ ...rect, width: 0 }, 0, 0, 2, 4)).toBeNull();
  });

  it('marks NaN and Inf cells and colours diffs around zero', () => {
    expect([glyph(NaN), glyph(Infinity), glyph(-Infinity), glyph(1)]).toEqual(['N', '+', '\u2212', '']);
    expect(cellColor(NaN, 0, 1, false)).toBe('rgb(214,39,140)');
    expect(cellColor(0, -2, 2, true)).toBe('rgb(255,255,255)');
    expect(cellColor(2, -2, 2, true)).toBe('rgb(255,0,0)');
    expect(cellColor(-2, -2, 2, true)).toBe('rgb(0,0,255)');
  });

  it('renders hostile names as text', () => {
    const el = container();
    new TensorViewerView(new FakeModel(state({ name: '<img src=x onerror="window.__pwned=1">' })), el);
    expect(el.querySelector('img')).toBeNull();
    expect(el.querySelector('.jp-Kernelcore-varName')!.textContent).toContain('<img');
  });
});
