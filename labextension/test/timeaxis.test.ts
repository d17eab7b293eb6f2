import { afterEach, describe, expect, it, vi } from 'vitest';
import { slicesOf, tickStep, TimeAxis } from '../src/timeaxis';
import { TraceTimelineView } from '../src/views/TraceTimeline';
import type { TraceEvent } from '../src/schema';
import { container, FakeModel } from './fake-model';

/** A recurrent op (block 0 op 0) running two timesteps of block 1 (tanh, then add), then a relu. */
function rnnEvents(): TraceEvent[] {
  const ev: TraceEvent[] = [];
  let seq = 0;
  const push = (e: Omit<TraceEvent, 'seq'>) => ev.push({ seq: seq++, ...e } as TraceEvent);
  push({ kind: 'run_begin', t_ns: 0 });
  for (let t = 0; t < 2; t++) {
    const base = 1000 + t * 10_000;
    push({ kind: 'step_begin', t_ns: base, block: 0, op: 0, op_type: 'recurrent', timestep: t });
    push({ kind: 'op_run', t_ns: base + 3000, block: 1, op: 0, op_type: 'tanh', dur_ns: 2000, timestep: t });
    push({ kind: 'op_run', t_ns: base + 6000, block: 1, op: 1, op_type: 'elementwise_add', dur_ns: 2500, timestep: t });
    push({ kind: 'step_end', t_ns: base + 8000, block: 0, op: 0, op_type: 'recurrent', timestep: t });
  }
  push({ kind: 'op_run', t_ns: 21_000, block: 0, op: 0, op_type: 'recurrent', dur_ns: 20_500 });
  push({ kind: 'op_run', t_ns: 23_000, block: 0, op: 1, op_type: 'relu', dur_ns: 1500 });
  push({ kind: 'run_end', t_ns: 24_000 });
  return ev;
}

afterEach(() => {
  document.body.textContent = '';
});

describe('trace time axis', () => {
  it('nests op runs inside timesteps inside the control-flow op that ran them', () => {
    const { slices, depth } = slicesOf(rnnEvents());
    const byLabel = (l: string) => slices.filter(s => s.label === l);
    expect(byLabel('recurrent')[0].depth).toBe(0);
    expect(byLabel('recurrent t=0')[0].depth).toBe(1);
    expect(byLabel('recurrent t=1')[0].depth).toBe(1);
    expect(byLabel('tanh').map(s => s.depth)).toEqual([2, 2]);
    expect(byLabel('relu')[0].depth).toBe(0);
    expect(depth).toBe(3);
    // an op run's t_ns is its end
    expect(byLabel('relu')[0].t0).toBe(21_500);
  });

  it('picks 1-2-5 tick steps', () => {
    expect(tickStep(1000, 10)).toBe(100);
    expect(tickStep(1500, 10)).toBe(200);
    expect(tickStep(4000, 10)).toBe(500);
  });

  it('draws only what is in view, zooms, and selects an event on click', () => {
    const el = container();
    const events = rnnEvents();
    const m = new FakeModel({ events, filter: {}, selected_event: -1 });
    const view = new TraceTimelineView(m as never, el, { local: true });
    const axis = view.axis;
    expect(axis.drawn).toBe(slicesOf(events).slices.length);
    // zoom onto the first timestep: the second one's slices and the relu leave the drawing
    axis.zoom(0.3, 5000);
    const [a, b] = axis.view;
    expect(b - a).toBeLessThan(10_000);
    const inView = slicesOf(events).slices.filter(s => s.t1 >= a && s.t0 <= b).length;
    expect(axis.drawn).toBe(inView);
    expect(axis.drawn).toBeLessThan(slicesOf(events).slices.length);
    const tanh = [...el.querySelectorAll('rect.jp-Kernelcore-slice')].find(r => r.querySelector('title')!.textContent!.startsWith('tanh'))!;
    tanh.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    const seq = Number(tanh.getAttribute('data-seq'));
    expect(m.get('selected_event')).toBe(seq);
    expect(el.querySelector('rect.jp-Kernelcore-slice.jp-Kernelcore-selected')!.getAttribute('data-seq')).toBe(String(seq));
    view.dispose();
  });

  it('labels ticks from the run\'s start, never before it, however large the clock', () => {
    // a monotonic clock far from zero, as the kernel's perf_counter_ns gives
    const base = 5_123_456_789_017;
    const events = rnnEvents().map(e => ({ ...e, t_ns: (e.t_ns as number) + base }));
    const axis = new TimeAxis();
    axis.setEvents(events);
    const labels = () => [...axis.el.querySelectorAll('text.jp-Kernelcore-tickLabel')].map(t => t.textContent!);
    expect(labels()[0]).toBe('0 ns');
    expect(labels().every(l => !l.startsWith('-'))).toBe(true);
    // panned to before the start: still no negative time
    const [a, b] = axis.view;
    (axis as any)._view = [a - (b - a) / 2, b - (b - a) / 2];
    axis.draw();
    expect(labels().length).toBeGreaterThan(0);
    expect(labels().every(l => !l.startsWith('-'))).toBe(true);
  });

  it('draws again at its own width once laid out', () => {
    const observed: Array<() => void> = [];
    vi.stubGlobal('ResizeObserver', class {
      constructor(private cb: () => void) {}
      observe() {
        observed.push(this.cb);
      }
      disconnect() {}
    });
    try {
      const axis = new TimeAxis();
      axis.setEvents(rnnEvents());
      const svg = axis.el.querySelector('svg')!;
      expect(svg.getAttribute('width')).toBe('800'); // not laid out yet: a guess
      axis.el.getBoundingClientRect = () => ({ width: 1140, height: 60, left: 0, top: 0, right: 1140, bottom: 60, x: 0, y: 0, toJSON: () => ({}) });
      observed.forEach(cb => cb());
      expect(svg.getAttribute('width')).toBe('1140');
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
