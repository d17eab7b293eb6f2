import { afterEach, describe, expect, it } from 'vitest';
import TensorViewerWidget from '../src/views/TensorViewer';
import { wholeLiteral } from '../src/tensorpanel';
import { container, FakeModel } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

function state(extra: Record<string, unknown> = {}) {
  return {
    name: 'w', shape: [2, 3], dtype: 'float32', place: 'CPUPlace', axes: [0, 1], index: [0, 0], diff: false, has_previous: false,
    slice: { rows: 2, cols: 3, row_step: 1, col_step: 1, data: [[0, 1, 2], [3, 'NaN', 5]], min: 0, max: 5 },
    health: { negative: 0, zero: 1, positive: 4, nan: 1, pos_inf: 0, neg_inf: 0, total: 6 },
    status: '', name_taken: {}, position: 'block 0 op #0 mul', editable: true, edits: 0,
    ...extra
  };
}

function canvasAt(el: HTMLElement): HTMLCanvasElement {
  const c = el.querySelector('canvas')!;
  c.getBoundingClientRect = () => ({ left: 0, top: 0, width: 300, height: 200, right: 300, bottom: 200, x: 0, y: 0, toJSON() {} }) as DOMRect;
  return c;
}

describe('tensor viewer edits', () => {
  it('shows the position, a colour legend with min and max, and sends Zero and Replace only when pressed', () => {
    const el = container();
    const m = new FakeModel(state());
    TensorViewerWidget.render({ model: m as any, el });
    expect(el.querySelector('.jp-Kernelcore-tvPosition')!.textContent).toBe(' at block 0 op #0 mul');
    expect(el.querySelector('.jp-Kernelcore-tvLegendMin')!.textContent).toBe('0');
    expect(el.querySelector('.jp-Kernelcore-tvLegendMax')!.textContent).toBe('5');
    expect(m.sent).toEqual([]);
    (el.querySelector('.jp-Kernelcore-tvZero') as HTMLButtonElement).click();
    expect(m.sent.at(-1)).toEqual({ type: 'edit', what: 'zero' });
    (el.querySelector('.jp-Kernelcore-tvReplaceName') as HTMLInputElement).value = ' w2 ';
    (el.querySelector('.jp-Kernelcore-tvReplace') as HTMLButtonElement).click();
    expect(m.sent.at(-1)).toEqual({ type: 'edit', what: 'replace', source: 'w2' });
  });

  it('a double-click opens a cell editor; Enter sends the cell edit with the tensor index, Escape sends nothing', () => {
    const el = container();
    const m = new FakeModel(state());
    TensorViewerWidget.render({ model: m as any, el });
    const c = canvasAt(el);
    c.dispatchEvent(new MouseEvent('dblclick', { clientX: 150, clientY: 150 }));
    const box = el.querySelector('.jp-Kernelcore-tvCellValue') as HTMLInputElement;
    expect(box.value).toBe('NaN');
    box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }));
    expect(el.querySelector('.jp-Kernelcore-tvCellValue')).toBeNull();
    expect(m.sent).toEqual([]);
    c.dispatchEvent(new MouseEvent('dblclick', { clientX: 250, clientY: 20 }));
    const box2 = el.querySelector('.jp-Kernelcore-tvCellValue') as HTMLInputElement;
    box2.value = '7.5';
    box2.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    expect(m.sent).toEqual([{ type: 'edit', what: 'cell', index: [0, 2], value: '7.5' }]);
  });

  it('offers no edits where the value is not editable (a plain array, the past, the sidebar panel)', () => {
    const el = container();
    const m = new FakeModel(state({ editable: false }));
    TensorViewerWidget.render({ model: m as any, el });
    expect((el.querySelector('.jp-Kernelcore-tvEdits') as HTMLElement).style.display).toBe('none');
    canvasAt(el).dispatchEvent(new MouseEvent('dblclick', { clientX: 10, clientY: 10 }));
    expect(el.querySelector('.jp-Kernelcore-tvCellValue')).toBeNull();
    (el.querySelector('.jp-Kernelcore-tvCopy') as HTMLButtonElement).click();
    expect(m.sent).toEqual([{ type: 'copy' }]);
  });

  it('the panel copies a whole slice as a NumPy literal and refuses a strided one', () => {
    const s = state().slice;
    expect(wholeLiteral(s, [2, 3], 'float32')).toBe('np.array([[0, 1, 2], [3, np.nan, 5]], dtype=np.float32)');
    expect(wholeLiteral({ ...s, rows: 1, data: [[1, 'Infinity']] }, [2], 'int64')).toBe('np.array([1, np.inf], dtype=np.int64)');
    expect(wholeLiteral({ ...s, row_step: 2 }, [4, 3], 'float32')).toBeNull();
    expect(wholeLiteral(s, [1, 2, 3], 'float32')).toBeNull();
  });
});

describe('tensor viewer after a new value', () => {
  it('forgets the hovered cell of the old value', () => {
    const el = container();
    const m = new FakeModel(state());
    TensorViewerWidget.render({ model: m as any, el });
    const c = canvasAt(el);
    c.dispatchEvent(new MouseEvent('mousemove', { clientX: 250, clientY: 20 }));
    expect(el.querySelector('.jp-Kernelcore-tvCell')!.textContent).toBe('[0, 2] = 2');
    m.pythonSets('slice', { ...state().slice, data: [[9, 9, 9], [9, 9, 9]], min: 9, max: 9 });
    expect(el.querySelector('.jp-Kernelcore-tvCell')!.textContent).toBe('');
  });
});
