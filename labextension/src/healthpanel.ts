/**
 * The "Training health" sidebar panel: the flight recorders of the active notebook's kernel (healthmodel.ts,
 * the `kernelcore.health` comm), live while a recorded loop runs. A picker when the kernel holds several
 * recorders (the most recent one by default), the first NaN/Inf, the loss curve, the gradient norm of each
 * parameter and a page of ops with their sparklines, drawn by views/healthdraw.ts as the HealthView widget
 * draws them. A click on a sparkline (or "debug there") opens a debug session right after that op in that
 * iteration; the debugger sidebar follows it (`onDebuggerMoved` shows it). Without a recorder the panel says
 * how to start one.
 */
import { Widget } from '@lumino/widgets';
import { clear, h } from './dom';
import { HealthModel, HealthPanelState, HealthViewChoice } from './healthmodel';
import type { HealthOpRow } from './protocol.generated';
import { healthControls } from './views/healthcontrols';
import { drawFirstBad, drawGrads, drawLoss, drawOpTable, OnDebug } from './views/healthdraw';

const MIN_WIDTH = 160;
const MAX_WIDTH = 600;
const FALLBACK_WIDTH = 260; // before the panel is laid out (or in a test's DOM without layout)

export class HealthPanel extends Widget {
  private _status: HTMLElement;
  private _hint: HTMLElement;
  private _controls: HTMLElement;
  private _firstBad: HTMLElement;
  private _reply: HTMLElement;
  private _loss: HTMLElement;
  private _grads: HTMLElement;
  private _table: HTMLElement;
  private _asked = false;
  private _selected: { block: number; op: number; iteration: number } | null = null;
  /** Called once a click opened a debug session (the plugin shows the debugger sidebar). */
  onDebuggerMoved: (() => void) | null = null;

  constructor(readonly model: HealthModel) {
    super();
    this.id = 'jp-kernelcore-health';
    this.addClass('jp-Kernelcore-view');
    this.addClass('jp-Kernelcore-healthPanel');
    this.title.caption = 'Training health (kernelcore)';
    this._status = h('div', { cls: 'jp-Kernelcore-status jp-Kernelcore-hpStatus' });
    this._hint = h('div', { cls: 'jp-Kernelcore-hpHint' });
    this._controls = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-hpControls' });
    this._firstBad = h('div', { cls: 'jp-Kernelcore-hvFirstBad', attrs: { role: 'alert' } });
    this._reply = h('div', { cls: 'jp-Kernelcore-reply jp-Kernelcore-hpReply', attrs: { 'aria-live': 'polite' } });
    this._loss = h('div', { cls: 'jp-Kernelcore-hvLoss' });
    this._grads = h('div', { cls: 'jp-Kernelcore-hvGrads' });
    this._table = h('div', { cls: 'jp-Kernelcore-hvTable', attrs: { role: 'table' } });
    this.node.append(
      h('div', { cls: 'jp-Kernelcore-sidebarTitle', text: 'Training health' }),
      this._status,
      this._hint,
      this._controls,
      this._firstBad,
      this._reply,
      this._loss,
      this._grads,
      this._table
    );
    model.changed.connect(this._changed, this);
    this.render();
  }

  /** The width the curves are drawn at: the panel's, within bounds. */
  get drawWidth(): number {
    const w = this.node.clientWidth - 16;
    return w > 0 ? Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, w)) : FALLBACK_WIDTH;
  }

  /** Ask the kernel for another view (a recorder, a statistic, an order, a filter, a page). */
  ask(choice: Partial<HealthViewChoice> & { recorder?: string }): void {
    void this.model.show({ points: this._points(), ...choice }).then(r => this._say(r.ok || this.model.status !== 'connected' ? '' : `cannot show that: ${r.error}`));
  }

  /** Open a debug session after op (block, op) in `iteration`. */
  readonly debugAt: OnDebug = (block, op, iteration) => {
    this._selected = { block, op, iteration };
    this._say(`opening the debugger at op ${block}/${op}, iteration ${iteration}\u2026`);
    void this.model.select(block, op, iteration).then(r => {
      if (!r.ok) {
        this._say(`cannot open the debugger there: ${r.error}`);
        return;
      }
      const got = r.result as { stop_reason?: string } | null;
      this._say(`debugger: ${String(got?.stop_reason ?? '')}`);
      this.render();
      this.onDebuggerMoved?.();
    });
  };

  render(): void {
    const m = this.model;
    this._status.textContent = m.statusText;
    const state = m.state;
    this._hint.textContent = state?.hint ?? '';
    this._drawControls(state);
    const payload = state?.payload ?? null;
    const iterations = payload?.overview.iterations ?? 0;
    const width = this.drawWidth;
    drawFirstBad(this._firstBad, payload?.overview ?? null, this.debugAt);
    drawLoss(this._loss, payload?.loss, iterations, { width, height: 56 });
    drawGrads(this._grads, payload?.grads, iterations, { width, height: 20 });
    if (payload) {
      drawOpTable(this._table, payload.ops as HealthOpRow[], { iterations, stat: state!.view.stat, selected: this._selected, spark: { width, height: 24 }, onDebug: this.debugAt, outputs: false });
    } else {
      clear(this._table);
    }
    if (m.error) {
      this._say(m.error);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.changed.disconnect(this._changed, this);
    super.dispose();
  }

  protected onResize(): void {
    this.render();
  }

  protected onAfterShow(): void {
    this.render();
  }

  private _changed(): void {
    if (this.model.status === 'connected' && !this._asked) {
      this._asked = true;
      this.ask({});
    } else if (this.model.status !== 'connected') {
      this._asked = false;
    }
    this.render();
  }

  private _points(): number {
    return Math.max(16, Math.min(500, Math.round(this.drawWidth / 2)));
  }

  private _say(text: string): void {
    this._reply.textContent = text;
  }

  private _drawControls(state: HealthPanelState | null): void {
    if (this._controls.contains(document.activeElement) && state?.payload) {
      return; // a push while the person types in the filter or holds a picker open: keep their control
    }
    clear(this._controls);
    if (!state?.payload) {
      return;
    }
    const view = state.view;
    const ov = state.payload.overview;
    if (state.recorders.length > 1) {
      const pick = h('select', { cls: 'jp-Kernelcore-hpRecorder', attrs: { 'aria-label': 'recorder' } });
      for (const r of state.recorders) {
        pick.appendChild(h('option', { text: `${r.label} (${r.iterations} it${r.stopped ? ', stopped' : ''})`, attrs: { value: r.name } }));
      }
      pick.value = state.recorder ?? '';
      pick.addEventListener('change', () => this.ask({ recorder: pick.value, page: 0 }));
      this._controls.appendChild(h('label', {}, ['recorder ', pick]));
    } else {
      this._controls.appendChild(h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hpRecorderName', text: `recorder ${state.recorder ?? ''}` }));
    }
    // a new order starts again at the first page, as a new filter does
    const choose = (change: Partial<HealthViewChoice>) => this.ask(change.sort !== undefined ? { ...change, page: 0 } : change);
    this._controls.append(...healthControls(ov, view, { choose, refresh: () => this.ask({}) }));
  }
}
