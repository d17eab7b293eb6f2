import { afterEach, describe, expect, it } from 'vitest';
import TraceTimelineWidget, { TraceTimelineView } from '../src/views/TraceTimeline';
import { HOSTILE, HOSTILE_OP, trace } from './fixtures';
import { container, FakeModel, texts } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

const rows = (el: Element) => [...el.querySelectorAll('.jp-Kernelcore-event')];

describe('TraceTimeline', () => {
  it('lists events with op durations as bars', () => {
    const el = container();
    const m = new FakeModel({ events: trace().events, filter: {}, selected_event: -1 });
    const cleanup = TraceTimelineWidget.render({ model: m, el });
    expect(rows(el).length).toBe(8);
    const bars = rows(el).map(r => (r.querySelector('.jp-Kernelcore-bar') as HTMLElement).style.width);
    expect(bars[2]).toBe('100%'); // the longest op
    expect(bars[4]).toBe(`${(100 * 500) / 1500}%`);
    expect(texts(el)).toContain('1.50 \u00b5s');
    const summary = [...el.querySelectorAll('.jp-Kernelcore-summaryName')].map(e => e.textContent);
    expect(summary).toEqual(['mul', 'relu', HOSTILE_OP]);
    expect(el.querySelector('.jp-Kernelcore-count')!.textContent).toBe('8 of 8 events');
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('filters by kind, op and scope through the filter trait', () => {
    const el = container();
    const m = new FakeModel({ events: trace().events, filter: {}, selected_event: -1 });
    const view = new TraceTimelineView(m, el);
    const kind = el.querySelector('select.jp-Kernelcore-filterKind') as HTMLSelectElement;
    kind.value = 'op_run';
    kind.dispatchEvent(new Event('change'));
    expect(m.get('filter')).toEqual({ kind: 'op_run', op_type: '', scope: null });
    expect(rows(el).length).toBe(3);
    const scope = el.querySelector('select.jp-Kernelcore-filterScope') as HTMLSelectElement;
    scope.value = '2';
    scope.dispatchEvent(new Event('change'));
    expect(m.get('filter')).toEqual({ kind: 'op_run', op_type: '', scope: 2 });
    expect(rows(el).map(r => r.querySelector('.jp-Kernelcore-seq')!.textContent)).toEqual(['4']);
    m.pythonSets('filter', { op_type: 'mul' });
    expect(rows(el).map(r => r.querySelector('.jp-Kernelcore-seq')!.textContent)).toEqual(['2']);
    expect(kind.value).toBe('');
    view.dispose();
  });

  it('selects an event on click', () => {
    const el = container();
    const m = new FakeModel({ events: trace().events, filter: {}, selected_event: -1 });
    const view = new TraceTimelineView(m, el);
    (rows(el)[2] as HTMLElement).click();
    expect(m.get('selected_event')).toBe(2);
    expect(m.sent).toEqual([{ type: 'select', seq: 2 }]);
    expect(el.querySelector('.jp-Kernelcore-event.jp-Kernelcore-selected .jp-Kernelcore-seq')!.textContent).toBe('2');
    expect(texts(el.querySelector('.jp-Kernelcore-eventDetail')!)).toContain('math.mul[cpu]');
    view.dispose();
  });

  it('shows hostile names verbatim', () => {
    const el = container();
    const m = new FakeModel({ events: trace().events, filter: {}, selected_event: 6 });
    const view = new TraceTimelineView(m, el);
    expect(el.querySelector('img, script')).toBeNull();
    expect(texts(el)).toContain(`${HOSTILE_OP} (block 0 op #4): ${HOSTILE}`);
    expect(texts(el.querySelector('.jp-Kernelcore-eventDetail')!)).toContain(HOSTILE);
    expect([...(el.querySelector('select.jp-Kernelcore-filterOp') as HTMLSelectElement).options].map(o => o.textContent)).toContain(HOSTILE_OP);
    view.dispose();
  });

  it('draws only the rows in view for a long trace', () => {
    const el = container();
    const events = Array.from({ length: 20000 }, (_, i) => ({ seq: i, kind: 'op_run', t_ns: i * 10, scope: 1, block: 0, op: i % 7, op_type: `op${i % 7}`, dur_ns: 5 + (i % 13) }));
    const m = new FakeModel({ events, filter: {}, selected_event: -1 });
    const view = new TraceTimelineView(m, el);
    expect(rows(el).length).toBeLessThan(100);
    expect(el.querySelector('.jp-Kernelcore-count')!.textContent).toBe('20000 of 20000 events');
    m.pythonSets('selected_event', 15000);
    expect(rows(el).some(r => r.querySelector('.jp-Kernelcore-seq')!.textContent === '15000')).toBe(true);
    view.dispose();
  });

  it('notes a truncated trace', () => {
    const el = container();
    const m = new FakeModel({ events: trace().events, filter: {}, selected_event: -1, truncated: 0 });
    const view = new TraceTimelineView(m, el);
    expect(el.querySelector('.jp-Kernelcore-note')!.textContent).toBe('');
    m.pythonSets('truncated', 12);
    expect(el.querySelector('.jp-Kernelcore-note')!.textContent).toContain('12 more were left out');
    view.dispose();
  });
});
