/**
 * A run's events on a time axis: op runs as slices (an op_run event's t_ns is its end, dur_ns its
 * length), RNN timesteps (step_begin .. step_end) as slices, nested by time (an op run inside a control
 * flow op's run, or inside a timestep, sits one row below it). Wheel zooms around the pointer, drag pans,
 * a click selects the slice's event. Only what is in view is drawn, and at most one slice per pixel column
 * and row, so a trace of 20,000 events stays quick.
 */
import { clear, formatNs } from './dom';
import { TraceEvent } from './schema';

const SVGNS = 'http://www.w3.org/2000/svg';
const ROW = 18;
const AXIS = 18;
const MAX_DRAWN = 4000;

export interface Slice {
  t0: number;
  t1: number;
  depth: number;
  label: string;
  seq: number;
  kind: 'op' | 'step';
}

/** Slices of `events`, sorted by start, with their nesting depth. */
export function slicesOf(events: TraceEvent[]): { slices: Slice[]; t0: number; t1: number; depth: number; maxDur: number } {
  const out: Slice[] = [];
  const open: TraceEvent[] = [];
  for (const e of events) {
    if (e.kind === 'op_run' && typeof e.t_ns === 'number') {
      const dur = Math.max(0, Number(e.dur_ns ?? 0));
      out.push({ t0: e.t_ns - dur, t1: e.t_ns, depth: 0, label: String(e.op_type ?? '?'), seq: e.seq, kind: 'op' });
    } else if (e.kind === 'step_begin') {
      open.push(e);
    } else if (e.kind === 'step_end') {
      // the latest open step of the same op and scope (timesteps do not interleave)
      let k = open.length - 1;
      while (k >= 0 && !(open[k].op === e.op && open[k].block === e.block)) {
        k--;
      }
      if (k >= 0) {
        const b = open.splice(k, 1)[0];
        out.push({ t0: b.t_ns, t1: e.t_ns, depth: 0, label: `${String(e.op_type ?? 'step')} t=${e.timestep}`, seq: b.seq, kind: 'step' });
      }
    }
  }
  // by start; the longer first where two start together (it holds the other)
  out.sort((a, b) => a.t0 - b.t0 || b.t1 - a.t1);
  const stack: Slice[] = [];
  let depth = 0;
  let maxDur = 0;
  for (const s of out) {
    while (stack.length && stack[stack.length - 1].t1 <= s.t0) {
      stack.pop();
    }
    s.depth = stack.length;
    depth = Math.max(depth, s.depth + 1);
    maxDur = Math.max(maxDur, s.t1 - s.t0);
    stack.push(s);
  }
  const t0 = out.length ? out[0].t0 : 0;
  const t1 = out.reduce((m, s) => Math.max(m, s.t1), t0);
  return { slices: out, t0, t1, depth, maxDur };
}

/** "Nice" tick spacing (1, 2, 5 x 10^k ns) for `span` ns over about `n` ticks. */
export function tickStep(span: number, n = 8): number {
  const raw = Math.max(1, span / n);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) {
    if (m * p >= raw) {
      return m * p;
    }
  }
  return 10 * p;
}

export class TimeAxis {
  readonly el: HTMLElement;
  onSelect: (seq: number) => void = () => undefined;
  private _svg: SVGSVGElement;
  private _data = slicesOf([]);
  private _view: [number, number] = [0, 1];
  private _selected = -1;
  private _drag: { x: number; v: [number, number]; moved: boolean } | null = null;
  /** how many slices the last draw put in the page */
  drawn = 0;
  /** the width (px) the last draw was made for */
  private _drawnWidth = 0;

  constructor() {
    this.el = document.createElement('div');
    this.el.className = 'jp-Kernelcore-timeAxis';
    this._svg = document.createElementNS(SVGNS, 'svg') as SVGSVGElement;
    this._svg.setAttribute('class', 'jp-Kernelcore-timeSvg');
    this.el.appendChild(this._svg);
    // the first draw may come before the axis is laid out (at a guessed width): draw again at its own
    if (typeof ResizeObserver !== 'undefined') {
      new ResizeObserver(() => {
        if (Math.round(this._width()) !== this._drawnWidth) {
          this.draw();
        }
      }).observe(this.el);
    }
    this.el.addEventListener('wheel', this._onWheel, { passive: false });
    this.el.addEventListener('pointerdown', ev => {
      this._drag = { x: ev.clientX, v: [...this._view] as [number, number], moved: false };
    });
    this.el.addEventListener('pointermove', ev => {
      const d = this._drag;
      if (!d) {
        return;
      }
      const dx = ev.clientX - d.x;
      if (Math.abs(dx) > 3) {
        d.moved = true;
      }
      if (d.moved) {
        const k = (d.v[1] - d.v[0]) / this._width();
        this._view = [d.v[0] - dx * k, d.v[1] - dx * k];
        this.draw();
      }
    });
    const end = () => {
      setTimeout(() => (this._drag = null), 0);
    };
    this.el.addEventListener('pointerup', end);
    this.el.addEventListener('pointercancel', end);
    this.el.addEventListener('click', ev => {
      if (this._drag?.moved) {
        return;
      }
      const seq = Number((ev.target as Element)?.getAttribute?.('data-seq'));
      if (Number.isFinite(seq) && (ev.target as Element).hasAttribute('data-seq')) {
        this.onSelect(seq);
      }
    });
  }

  setEvents(events: TraceEvent[]): void {
    this._data = slicesOf(events);
    this.fit();
  }

  get slices(): Slice[] {
    return this._data.slices;
  }

  get view(): [number, number] {
    return [...this._view] as [number, number];
  }

  fit(): void {
    const { t0, t1 } = this._data;
    const pad = Math.max(1, (t1 - t0) * 0.02);
    this._view = [t0 - pad, t1 + pad];
    this.draw();
  }

  /** Zoom by `k` (< 1 zooms in) around time `at` (default: the middle). */
  zoom(k: number, at?: number): void {
    const [a, b] = this._view;
    const c = at ?? (a + b) / 2;
    const span = Math.max(10, (b - a) * k);
    const f = (c - a) / (b - a);
    this._view = [c - f * span, c - f * span + span];
    this.draw();
  }

  select(seq: number): void {
    this._selected = seq;
    this.draw();
  }

  private _width(): number {
    return this.el.getBoundingClientRect().width || 800;
  }

  private _onWheel = (ev: WheelEvent) => {
    ev.preventDefault();
    const r = this.el.getBoundingClientRect();
    const [a, b] = this._view;
    const at = a + ((ev.clientX - r.left) / (r.width || 800)) * (b - a);
    this.zoom(Math.exp(Math.max(-1, Math.min(1, ev.deltaY * 0.002))), at);
  };

  draw(): void {
    const svg = this._svg;
    clear(svg);
    const w = this._width();
    this._drawnWidth = Math.round(w);
    const { slices, depth, maxDur } = this._data;
    const hgt = AXIS + Math.max(1, depth) * ROW + 4;
    svg.setAttribute('width', String(w));
    svg.setAttribute('height', String(hgt));
    svg.setAttribute('viewBox', `0 0 ${w} ${hgt}`);
    const [a, b] = this._view;
    const x = (t: number) => ((t - a) / (b - a)) * w;
    // axis
    const step = tickStep(b - a, Math.max(2, Math.floor(w / 110)));
    // ticks count from the run's start (0), none before it: the view's margin holds no negative times
    const start = this._data.t0;
    for (let t = start + Math.max(0, Math.ceil((a - start) / step)) * step; t <= b; t += step) {
      const line = document.createElementNS(SVGNS, 'line');
      line.setAttribute('class', 'jp-Kernelcore-tick');
      line.setAttribute('x1', String(x(t)));
      line.setAttribute('x2', String(x(t)));
      line.setAttribute('y1', '0');
      line.setAttribute('y2', String(hgt));
      svg.appendChild(line);
      const label = document.createElementNS(SVGNS, 'text');
      label.setAttribute('class', 'jp-Kernelcore-tickLabel');
      label.setAttribute('x', String(x(t) + 2));
      label.setAttribute('y', '12');
      label.textContent = formatNs(t - this._data.t0);
      svg.appendChild(label);
    }
    // slices in view: those starting before the view's end and ending after its start (sorted by start,
    // so the first that can reach the view starts at most maxDur before it)
    let lo = 0;
    let hi = slices.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (slices[mid].t0 < a - maxDur) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const lastPx = new Map<number, number>();
    let n = 0;
    for (let i = lo; i < slices.length && slices[i].t0 <= b && n < MAX_DRAWN; i++) {
      const s = slices[i];
      if (s.t1 < a) {
        continue;
      }
      const x0 = Math.max(-1, x(s.t0));
      const x1 = Math.min(w + 1, x(s.t1));
      const px = Math.floor(x0);
      if (x1 - x0 < 1 && lastPx.get(s.depth) === px && s.seq !== this._selected) {
        continue; // one slice per pixel column and row
      }
      lastPx.set(s.depth, px);
      const g = document.createElementNS(SVGNS, 'rect');
      g.setAttribute('class', `jp-Kernelcore-slice jp-Kernelcore-slice-${s.kind}${s.seq === this._selected ? ' jp-Kernelcore-selected' : ''}`);
      g.setAttribute('x', String(x0));
      g.setAttribute('y', String(AXIS + s.depth * ROW));
      g.setAttribute('width', String(Math.max(1, x1 - x0)));
      g.setAttribute('height', String(ROW - 2));
      g.setAttribute('data-seq', String(s.seq));
      const title = document.createElementNS(SVGNS, 'title');
      title.textContent = `${s.label}  ${formatNs(s.t1 - s.t0)}`;
      g.appendChild(title);
      svg.appendChild(g);
      n++;
      if (x1 - x0 > 40) {
        const t = document.createElementNS(SVGNS, 'text');
        t.setAttribute('class', 'jp-Kernelcore-sliceLabel');
        t.setAttribute('x', String(x0 + 3));
        t.setAttribute('y', String(AXIS + s.depth * ROW + 12));
        t.setAttribute('data-seq', String(s.seq));
        t.textContent = s.label.length * 6 > x1 - x0 - 6 ? s.label.slice(0, Math.max(1, Math.floor((x1 - x0 - 6) / 6))) : s.label;
        svg.appendChild(t);
      }
    }
    this.drawn = n;
  }
}
