/**
 * HealthView: a training loop's health from its flight recorder. On top the loss curve, under it each
 * parameter's gradient L2 norm over iterations, then a table of ops (the worst first, filterable, a page at a
 * time) each with a sparkline of the chosen statistic over iterations: NaN/Inf iterations as red bands, the
 * first bad one as a red line. Clicking a sparkline asks Python to open a Debugger paused right after that op
 * in the iteration under the pointer; the Debugger (the `debugger_widget` child) is drawn below the table.
 *
 * Traits: stat, sort, filter, page, overview, ops, loss, grads, selected, debugger_widget, status.
 * Messages: {type: "query", stat?, sort?, filter?, page?}, {type: "select", block, op, iteration},
 * {type: "refresh"}. Python bounds every series (at most 500 points, 20 ops a page).
 */
import { button, clear, formatNumber, h } from '../dom';
import { childModel, Listeners, RenderProps, WidgetModel } from '../model';
import type { HealthCurve, HealthOpRow, HealthOverview } from '../protocol.generated';
import type { DebuggerTraits, HealthViewTraits } from '../widgets.generated';
import { withKernelNotice } from '../restart';
import { DebuggerView, debuggerChildren } from './Debugger';
import { iterationAt, Point, Range, sparkline } from './sparkline';

const SPARK_W = 240;
const SPARK_H = 28;
const CURVE_W = 560;
const CURVE_H = 72;
const GRAD_W = 240;
const GRAD_H = 22;

function overviewOf(x: unknown): HealthOverview | null {
  const o = x as HealthOverview | null;
  return o && typeof o === 'object' && typeof o.iterations === 'number' ? o : null;
}

function curveOf(x: unknown): HealthCurve | null {
  const c = x as HealthCurve | null;
  return c && typeof c === 'object' && Array.isArray(c.points) ? c : null;
}

/** A figure in at most four significant digits (the full value is the recorder's). */
export function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined) {
    return '\u2013';
  }
  const a = Math.abs(v);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(3) : formatNumber(Number(v.toPrecision(4)));
}

export class HealthViewView {
  readonly root: HTMLElement;
  private _listeners: Listeners<HealthViewTraits>;
  private _status: HTMLElement;
  private _firstBad: HTMLElement;
  private _loss: HTMLElement;
  private _grads: HTMLElement;
  private _controls: HTMLElement;
  private _table: HTMLElement;
  private _debugBox: HTMLElement;
  private _debugger: DebuggerView | null = null;
  private _debuggerRef: string | null = null;

  constructor(
    readonly model: WidgetModel<HealthViewTraits>,
    el: HTMLElement
  ) {
    this._listeners = new Listeners(model);
    this.root = h('div', { cls: 'jp-Kernelcore-HealthView jp-Kernelcore-view' });
    this._status = h('div', { cls: 'jp-Kernelcore-status jp-Kernelcore-hvStatus' });
    this._firstBad = h('div', { cls: 'jp-Kernelcore-hvFirstBad', attrs: { role: 'alert' } });
    this._loss = h('div', { cls: 'jp-Kernelcore-hvLoss' });
    this._grads = h('div', { cls: 'jp-Kernelcore-hvGrads' });
    this._controls = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-hvControls' });
    this._table = h('div', { cls: 'jp-Kernelcore-hvTable', attrs: { role: 'table' } });
    this._debugBox = h('div', { cls: 'jp-Kernelcore-hvDebugger' });
    this.root.append(this._status, this._firstBad, this._loss, this._grads, this._controls, this._table, this._debugBox);
    el.appendChild(this.root);
    this._listeners.onChange(['overview', 'ops', 'loss', 'grads', 'stat', 'sort', 'filter', 'page', 'selected', 'status'], () => this.refresh());
    this._listeners.onChange(['debugger_widget'], () => void this._showDebugger());
    this.refresh();
    void this._showDebugger();
  }

  get iterations(): number {
    return overviewOf(this.model.get('overview'))?.iterations ?? 0;
  }

  query(change: { stat?: string; sort?: string; filter?: string; page?: number }): void {
    this.model.send({ type: 'query', ...change });
  }

  select(row: HealthOpRow, iteration: number): void {
    this.model.send({ type: 'select', block: row.block, op: row.op, iteration });
  }

  refresh(): void {
    const ov = overviewOf(this.model.get('overview'));
    this._status.textContent = String(this.model.get('status') ?? '');
    this._drawFirstBad(ov);
    this._drawLoss();
    this._drawGrads();
    this._drawControls(ov);
    this._drawTable();
  }

  private _drawFirstBad(ov: HealthOverview | null): void {
    clear(this._firstBad);
    const fb = ov?.first_bad as HealthOverview['first_bad'] & { iteration?: number };
    if (!fb || typeof fb.iteration !== 'number') {
      return;
    }
    const bad = fb as { iteration: number; block: number; op: number; op_type: string; var: string; id: string };
    this._firstBad.append(
      h('span', { cls: 'jp-Kernelcore-hvFirstBadText', text: `First NaN/Inf: iteration ${bad.iteration}, ${bad.op_type} (${bad.id}) wrote '${bad.var}'` }),
      button('debug there', () => this.model.send({ type: 'select', block: bad.block, op: bad.op, iteration: bad.iteration }), {
        cls: 'jp-Kernelcore-hvDebugFirst',
        title: 'open a debugger paused right after this op in this iteration'
      })
    );
  }

  private _curve(c: HealthCurve, width: number, height: number, cls: string): HTMLElement {
    const firstBad = c.bad.length ? c.bad[0][0] : null;
    const svg = sparkline(c.points as Point[], { width, height, iterations: this.iterations || c.points.length, bad: c.bad as Range[], firstBad, cls, label: `${c.name} over iterations` });
    return h('div', { cls: 'jp-Kernelcore-hvCurve' }, [
      h('span', { cls: 'jp-Kernelcore-hvCurveName', text: c.name, title: c.name }),
      svg as unknown as HTMLElement,
      h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hvLast', text: fmt(c.last) })
    ]);
  }

  private _drawLoss(): void {
    clear(this._loss);
    const c = curveOf(this.model.get('loss'));
    if (c) {
      this._loss.append(h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Loss (symlog scale)' }), this._curve(c, CURVE_W, CURVE_H, 'jp-Kernelcore-hvLossCurve'));
    }
  }

  private _drawGrads(): void {
    clear(this._grads);
    const grads = (this.model.get('grads') ?? []).map(curveOf).filter((c): c is HealthCurve => !!c);
    if (grads.length) {
      this._grads.append(h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Gradient L2 norm per parameter' }));
      for (const c of grads) {
        this._grads.appendChild(this._curve(c, GRAD_W, GRAD_H, 'jp-Kernelcore-hvGradCurve'));
      }
    }
  }

  private _drawControls(ov: HealthOverview | null): void {
    clear(this._controls);
    const stat = h('select', { cls: 'jp-Kernelcore-hvStat', attrs: { 'aria-label': 'statistic' } });
    for (const s of ov?.stats ?? ['l2']) {
      stat.appendChild(h('option', { text: s, attrs: { value: s } }));
    }
    stat.value = String(this.model.get('stat'));
    stat.addEventListener('change', () => this.query({ stat: stat.value }));
    const sort = h('select', { cls: 'jp-Kernelcore-hvSort', attrs: { 'aria-label': 'order' } });
    sort.append(h('option', { text: 'worst first', attrs: { value: 'worst' } }), h('option', { text: 'program order', attrs: { value: 'program' } }));
    sort.value = String(this.model.get('sort'));
    sort.addEventListener('change', () => this.query({ sort: sort.value }));
    const filter = h('input', { cls: 'jp-Kernelcore-hvFilter', attrs: { type: 'search', placeholder: 'filter ops', 'aria-label': 'filter ops' } });
    filter.value = String(this.model.get('filter') ?? '');
    filter.addEventListener('change', () => this.query({ filter: filter.value, page: 0 }));
    const page = Number(this.model.get('page') ?? 0);
    const pages = ov?.pages ?? 1;
    const prev = button('\u2039', () => this.query({ page: page - 1 }), { cls: 'jp-Kernelcore-hvPrev', title: 'previous page' });
    const next = button('\u203a', () => this.query({ page: page + 1 }), { cls: 'jp-Kernelcore-hvNext', title: 'next page' });
    prev.disabled = page <= 0;
    next.disabled = page >= pages - 1;
    const counts = ov ? `${ov.matching} of ${ov.ops} ops, ${ov.iterations} iterations; page ${page + 1}/${pages}` : '';
    this._controls.append(
      h('label', {}, ['statistic ', stat]),
      h('label', {}, ['order ', sort]),
      filter,
      prev,
      next,
      h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hvCounts', text: counts }),
      button('refresh', () => this.model.send({ type: 'refresh' }), { cls: 'jp-Kernelcore-hvRefresh', title: 'read the recorder again' })
    );
  }

  private _drawTable(): void {
    clear(this._table);
    const rows = (this.model.get('ops') ?? []) as HealthOpRow[];
    const sel = this.model.get('selected') as { block?: number; op?: number; iteration?: number };
    this._table.appendChild(
      h('div', { cls: 'jp-Kernelcore-hvRow jp-Kernelcore-hvHeader', attrs: { role: 'row' } }, [
        h('span', { text: 'op' }),
        h('span', { text: 'outputs' }),
        h('span', { text: 'first bad' }),
        h('span', { text: `${String(this.model.get('stat'))} over iterations (click: debug there)` }),
        h('span', { text: 'last' })
      ])
    );
    for (const row of rows) {
      const spark = sparkline(row.points as Point[], { width: SPARK_W, height: SPARK_H, iterations: this.iterations, bad: row.bad as Range[], firstBad: row.first_bad, cls: 'jp-Kernelcore-hvOpSpark', label: `${row.op_type} ${row.id}` });
      spark.addEventListener('click', ev => {
        const rect = spark.getBoundingClientRect();
        this.select(row, iterationAt(ev.clientX - rect.left, this.iterations, rect.width || SPARK_W));
      });
      const chosen = sel && sel.block === row.block && sel.op === row.op;
      const vars = row.vars.join(', ') + (row.more_vars ? ` +${row.more_vars}` : '');
      this._table.appendChild(
        h('div', { cls: ['jp-Kernelcore-hvRow', row.first_bad !== null ? 'jp-Kernelcore-hvBadRow' : '', chosen ? 'jp-Kernelcore-hvChosen' : ''], attrs: { role: 'row', 'data-op': row.id } }, [
          h('span', { cls: 'jp-Kernelcore-hvOp', text: `${row.op_type} ${row.id}` }),
          h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hvVars', text: vars, title: vars }),
          h('span', { cls: 'jp-Kernelcore-hvFirstBadCell', text: row.first_bad === null ? '' : `it ${row.first_bad}` }),
          spark as unknown as HTMLElement,
          h('span', { cls: 'jp-Kernelcore-muted', text: fmt(row.last) + (chosen ? ` \u2190 it ${sel.iteration}` : '') })
        ])
      );
    }
  }

  /** Draw the Debugger child below the table (or remove the old one). */
  private async _showDebugger(): Promise<void> {
    const ref = this.model.get('debugger_widget');
    if (ref === this._debuggerRef) {
      return;
    }
    this._debuggerRef = ref;
    this._debugger?.dispose();
    this._debugger = null;
    clear(this._debugBox);
    const child = await childModel<DebuggerTraits>(this.model, ref);
    if (!child || this._debuggerRef !== ref) {
      return;
    }
    const view = new DebuggerView(child, this._debugBox, await debuggerChildren(child));
    this._debugger = view;
    await view.ready;
  }

  dispose(): void {
    this._listeners.dispose();
    this._debugger?.dispose();
    this.root.remove();
  }
}

function render({ model, el }: RenderProps<HealthViewTraits>): () => void {
  const view = new HealthViewView(model, el);
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };
