/**
 * The training-health drawing shared by the HealthView widget and the "Training health" sidebar panel: the
 * first-bad line, a curve (loss or a gradient norm) with its name and last value, and the table of ops with
 * their sparklines. Both give the same payload (Python's health_payload.py) and say what a click does; every
 * name is set as text (never parsed as HTML).
 */
import { button, clear, formatNumber, h } from '../dom';
import type { HealthCurve, HealthOpRow, HealthOverview } from '../protocol.generated';
import { iterationAt, Point, Range, sparkline } from './sparkline';

export interface FirstBad {
  iteration: number;
  block: number;
  op: number;
  op_type: string;
  var: string;
  id: string;
}

/** Where a click asks to debug: an op at an iteration. */
export type OnDebug = (block: number, op: number, iteration: number) => void;

export function overviewOf(x: unknown): HealthOverview | null {
  const o = x as HealthOverview | null;
  return o && typeof o === 'object' && typeof o.iterations === 'number' ? o : null;
}

export function curveOf(x: unknown): HealthCurve | null {
  const c = x as HealthCurve | null;
  return c && typeof c === 'object' && Array.isArray(c.points) ? c : null;
}

export function firstBadOf(ov: HealthOverview | null): FirstBad | null {
  const fb = ov?.first_bad as Partial<FirstBad> | undefined;
  return fb && typeof fb.iteration === 'number' ? (fb as FirstBad) : null;
}

/** A figure in at most four significant digits (the full value is the recorder's). */
export function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined) {
    return '\u2013';
  }
  const a = Math.abs(v);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(3) : formatNumber(Number(v.toPrecision(4)));
}

/** The "First NaN/Inf: ..." line and its "debug there" button into `el` (emptied; nothing when none). */
export function drawFirstBad(el: HTMLElement, ov: HealthOverview | null, onDebug: OnDebug): void {
  clear(el);
  const bad = firstBadOf(ov);
  if (!bad) {
    return;
  }
  el.append(
    h('span', { cls: 'jp-Kernelcore-hvFirstBadText', text: `First NaN/Inf: iteration ${bad.iteration}, ${bad.op_type} (${bad.id}) wrote '${bad.var}'` }),
    button('debug there', () => onDebug(bad.block, bad.op, bad.iteration), {
      cls: 'jp-Kernelcore-hvDebugFirst',
      title: 'open a debugger paused right after this op in this iteration'
    })
  );
}

/** One curve: its name, its sparkline over `iterations`, its last value. */
export function drawCurve(c: HealthCurve, iterations: number, width: number, height: number, cls: string): HTMLElement {
  const firstBad = c.bad.length ? c.bad[0][0] : null;
  const svg = sparkline(c.points as Point[], { width, height, iterations: iterations || c.points.length, bad: c.bad as Range[], firstBad, cls, label: `${c.name} over iterations` });
  return h('div', { cls: 'jp-Kernelcore-hvCurve' }, [
    h('span', { cls: 'jp-Kernelcore-hvCurveName', text: c.name, title: c.name }),
    svg as unknown as HTMLElement,
    h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hvLast', text: fmt(c.last) })
  ]);
}

export interface CurveSize {
  width: number;
  height: number;
}

/** The loss curve under its title into `el` (emptied; nothing without a loss). */
export function drawLoss(el: HTMLElement, loss: unknown, iterations: number, size: CurveSize): void {
  clear(el);
  const c = curveOf(loss);
  if (c) {
    el.append(h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Loss (symlog scale)' }), drawCurve(c, iterations, size.width, size.height, 'jp-Kernelcore-hvLossCurve'));
  }
}

/** The gradient norms, one curve a parameter, into `el` (emptied; nothing without any). */
export function drawGrads(el: HTMLElement, grads: unknown, iterations: number, size: CurveSize): void {
  clear(el);
  const curves = (Array.isArray(grads) ? grads : []).map(curveOf).filter((c): c is HealthCurve => !!c);
  if (curves.length) {
    el.append(h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Gradient L2 norm per parameter' }));
    for (const c of curves) {
      el.appendChild(drawCurve(c, iterations, size.width, size.height, 'jp-Kernelcore-hvGradCurve'));
    }
  }
}

export interface TableOptions {
  iterations: number;
  stat: string;
  /** the op and iteration chosen last (marked in its row) */
  selected: { block?: number; op?: number; iteration?: number } | null;
  spark: CurveSize;
  onDebug: OnDebug;
  /** show the outputs' column (the panel is too narrow for it) */
  outputs?: boolean;
}

/** The table of ops into `el` (emptied): a header, then a row an op, its sparkline a click target. */
export function drawOpTable(el: HTMLElement, rows: HealthOpRow[], opts: TableOptions): void {
  clear(el);
  const outputs = opts.outputs ?? true;
  const head = [h('span', { text: 'op' }), ...(outputs ? [h('span', { text: 'outputs' })] : []), h('span', { text: 'first bad' }), h('span', { text: `${opts.stat} over iterations (click: debug there)` }), h('span', { text: 'last' })];
  el.appendChild(h('div', { cls: 'jp-Kernelcore-hvRow jp-Kernelcore-hvHeader', attrs: { role: 'row' } }, head));
  for (const row of rows) {
    el.appendChild(opRow(row, opts, outputs));
  }
}

function opRow(row: HealthOpRow, opts: TableOptions, outputs: boolean): HTMLElement {
  const { width, height } = opts.spark;
  const spark = sparkline(row.points as Point[], { width, height, iterations: opts.iterations, bad: row.bad as Range[], firstBad: row.first_bad, cls: 'jp-Kernelcore-hvOpSpark', label: `${row.op_type} ${row.id}` });
  spark.addEventListener('click', ev => {
    const rect = spark.getBoundingClientRect();
    opts.onDebug(row.block, row.op, iterationAt(ev.clientX - rect.left, opts.iterations, rect.width || width));
  });
  const sel = opts.selected;
  const chosen = !!sel && sel.block === row.block && sel.op === row.op;
  const vars = row.vars.join(', ') + (row.more_vars ? ` +${row.more_vars}` : '');
  const cells = [
    h('span', { cls: 'jp-Kernelcore-hvOp', text: `${row.op_type} ${row.id}`, title: `${row.op_type} ${row.id}: ${vars}` }),
    ...(outputs ? [h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hvVars', text: vars, title: vars })] : []),
    h('span', { cls: 'jp-Kernelcore-hvFirstBadCell', text: row.first_bad === null ? '' : `it ${row.first_bad}` }),
    spark as unknown as HTMLElement,
    h('span', { cls: 'jp-Kernelcore-muted', text: fmt(row.last) + (chosen ? ` \u2190 it ${sel!.iteration}` : '') })
  ];
  return h('div', { cls: ['jp-Kernelcore-hvRow', row.first_bad !== null ? 'jp-Kernelcore-hvBadRow' : '', chosen ? 'jp-Kernelcore-hvChosen' : ''], attrs: { role: 'row', 'data-op': row.id } }, cells);
}
