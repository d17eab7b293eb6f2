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
import { clear, h } from '../dom';
import { childModel, Listeners, RenderProps, WidgetModel } from '../model';
import type { HealthOpRow, HealthOverview } from '../protocol.generated';
import type { DebuggerTraits, HealthViewTraits } from '../widgets.generated';
import { withKernelNotice } from '../restart';
import { DebuggerView, debuggerChildren } from './Debugger';
import { healthControls } from './healthcontrols';
import { drawFirstBad, drawGrads, drawLoss, drawOpTable, overviewOf } from './healthdraw';

const SPARK = { width: 240, height: 28 };
const LOSS = { width: 560, height: 72 };
const GRAD = { width: 240, height: 22 };

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
    this._debugAt(row.block, row.op, iteration);
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

  private _debugAt = (block: number, op: number, iteration: number): void => {
    this.model.send({ type: 'select', block, op, iteration });
  };

  private _drawFirstBad(ov: HealthOverview | null): void {
    drawFirstBad(this._firstBad, ov, this._debugAt);
  }

  private _drawLoss(): void {
    drawLoss(this._loss, this.model.get('loss'), this.iterations, LOSS);
  }

  private _drawGrads(): void {
    drawGrads(this._grads, this.model.get('grads'), this.iterations, GRAD);
  }

  private _drawControls(ov: HealthOverview | null): void {
    clear(this._controls);
    const now = {
      stat: String(this.model.get('stat')),
      sort: String(this.model.get('sort')),
      filter: String(this.model.get('filter') ?? ''),
      page: Number(this.model.get('page') ?? 0)
    };
    this._controls.append(...healthControls(ov, now, { choose: change => this.query(change), refresh: () => this.model.send({ type: 'refresh' }) }));
  }

  private _drawTable(): void {
    const rows = (this.model.get('ops') ?? []) as HealthOpRow[];
    const selected = this.model.get('selected') as { block?: number; op?: number; iteration?: number };
    drawOpTable(this._table, rows, { iterations: this.iterations, stat: String(this.model.get('stat')), selected, spark: SPARK, onDebug: this._debugAt });
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
