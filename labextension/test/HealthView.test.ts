import { afterEach, describe, expect, it } from 'vitest';
import HealthViewWidget from '../src/views/HealthView';
import { iterationAt, sparkline, sparkPath, xOf } from '../src/views/sparkline';
import { container, FakeModel } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

const ROW = { id: 'o0:6', block: 0, op: 6, op_type: 'elementwise_mul', vars: ['mul.out'], more_vars: 0, first_bad: 13, bad: [[13, 13]], points: [[0, 1], [5, 3], [12, 1e30]], last: 1e30, peak: 1e30 };

function state(extra: Record<string, unknown> = {}) {
  return {
    stat: 'l2',
    sort: 'worst',
    filter: '',
    page: 0,
    overview: { iterations: 14, ops: 22, matching: 22, pages: 2, page_size: 20, first_bad: { iteration: 13, order: 6, block: 0, op: 6, op_type: 'elementwise_mul', var: 'mul.out', id: 'o0:6' }, stats: ['l2', 'max'], hit: '' },
    ops: [ROW, { ...ROW, id: 'o0:7', op: 7, op_type: 'mean', first_bad: null, bad: [] }],
    loss: { name: 'loss', points: [[0, 2], [1, 1]], bad: [[13, 13]], last: 1 },
    grads: [{ name: 'fc_0.w_0', points: [[0, 1]], bad: [], last: 1 }],
    selected: {},
    debugger_widget: null,
    status: 'recorded 14 iterations',
    ...extra
  };
}

describe('sparkline', () => {
  it('maps iterations to pixels and back', () => {
    for (const it of [0, 7, 9999]) {
      expect(iterationAt(xOf(it, 10000, 240), 10000, 240)).toBe(it);
    }
    expect(iterationAt(-5, 14, 240)).toBe(0);
    expect(iterationAt(1e9, 14, 240)).toBe(13);
  });

  it('draws the bad ranges in red, the first bad iteration as a line, and a path through every point', () => {
    const svg = sparkline([[0, 1], [3, -1e20], [9, 4]], { width: 100, height: 20, iterations: 10, bad: [[4, 5]], firstBad: 4 });
    const rect = svg.querySelector('.jp-Kernelcore-sparkBad')!;
    expect([rect.getAttribute('x'), rect.getAttribute('width')]).toEqual(['40.0', '20.0']);
    expect(svg.querySelector('.jp-Kernelcore-sparkFirstBad')!.getAttribute('x1')).toBe('45.0');
    expect(sparkPath([[0, 1], [3, -1e20], [9, 4]], 10, 100, 20).split(' ').length).toBe(3);
    expect(sparkPath([], 10, 100, 20)).toBe('');
  });
});

describe('HealthView', () => {
  it('marks the first bad iteration and the bad op, and a click on a sparkline selects that iteration', () => {
    const el = container();
    const m = new FakeModel(state());
    const cleanup = HealthViewWidget.render({ model: m as any, el }) as () => void;
    expect(el.querySelector('.jp-Kernelcore-hvFirstBadText')!.textContent).toContain('iteration 13');
    const rows = [...el.querySelectorAll('.jp-Kernelcore-hvRow[data-op]')];
    expect(rows.map(r => r.getAttribute('data-op'))).toEqual(['o0:6', 'o0:7']);
    expect(rows[0].classList.contains('jp-Kernelcore-hvBadRow')).toBe(true);
    expect(rows[1].classList.contains('jp-Kernelcore-hvBadRow')).toBe(false);
    const spark = rows[0].querySelector('svg')!;
    spark.getBoundingClientRect = () => ({ left: 10, top: 0, width: 240, height: 28, right: 250, bottom: 28, x: 10, y: 0, toJSON() {} }) as DOMRect;
    spark.dispatchEvent(new MouseEvent('click', { clientX: 10 + xOf(13, 14, 240), bubbles: true }));
    expect(m.sent.at(-1)).toEqual({ type: 'select', block: 0, op: 6, iteration: 13 });
    (el.querySelector('.jp-Kernelcore-hvDebugFirst') as HTMLButtonElement).click();
    expect(m.sent.at(-1)).toEqual({ type: 'select', block: 0, op: 6, iteration: 13 });
    expect(el.querySelectorAll('.jp-Kernelcore-hvGradCurve').length).toBe(1);
    expect(el.querySelector('.jp-Kernelcore-hvLossCurve .jp-Kernelcore-sparkBad')).not.toBeNull();
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('asks Python for another statistic, filter and page', () => {
    const el = container();
    const m = new FakeModel(state());
    HealthViewWidget.render({ model: m as any, el });
    const stat = el.querySelector('.jp-Kernelcore-hvStat') as HTMLSelectElement;
    stat.value = 'max';
    stat.dispatchEvent(new Event('change'));
    expect(m.sent.at(-1)).toEqual({ type: 'query', stat: 'max' });
    const filter = el.querySelector('.jp-Kernelcore-hvFilter') as HTMLInputElement;
    filter.value = 'grad';
    filter.dispatchEvent(new Event('change'));
    expect(m.sent.at(-1)).toEqual({ type: 'query', filter: 'grad', page: 0 });
    expect((el.querySelector('.jp-Kernelcore-hvPrev') as HTMLButtonElement).disabled).toBe(true);
    (el.querySelector('.jp-Kernelcore-hvNext') as HTMLButtonElement).click();
    expect(m.sent.at(-1)).toEqual({ type: 'query', page: 1 });
  });

  it('renders hostile names as text', () => {
    const el = container();
    const evil = '<img src=x onerror=alert(1)>';
    const m = new FakeModel(state({ ops: [{ ...ROW, op_type: evil, vars: [evil] }] }));
    HealthViewWidget.render({ model: m as any, el });
    expect(el.querySelector('img')).toBeNull();
    expect(el.textContent).toContain(evil);
  });
});
