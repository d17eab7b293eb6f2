/**
 * RNNStepper: step through the timesteps of a recurrent op, live (a paused debug session) or replayed
 * from a trace. A slider and prev/next buttons move (`goto` / `prev` / `next` messages; Python answers
 * by setting `timestep` and `step_scope`); the step scope at t is shown by role (x_t, previous memory,
 * new memory, outputs), and an arrow strip shows memory flowing from step t-1 into step t.
 *
 * Traits: mode, num_steps, timestep, step_scope, memory_flow, status. See docs/frontend-contract.md.
 */
import { button, clear, formatShape, h } from '../dom';
import { Listeners, RenderProps, WidgetModel } from '../model';
import type { RNNStepperTraits } from '../widgets.generated';
import { isValuePreview, renderPreview } from '../preview';
import { MemoryFlowJSON, ScopeJSON, StepVarJSON } from '../schema';
import { withKernelNotice } from '../restart';

const STRIP_WINDOW = 7; // boxes either side of the current step

const COLUMNS: Array<[string, string]> = [
  ['x_t', 'x_t (input at t)'],
  ['h_prev', 'previous memory'],
  ['h_new', 'new memory'],
  ['output', 'outputs']
];

export interface RNNStepperOptions {
  /** What the "next" button does instead of sending `next` (the Debugger's panel: its step_timestep move). */
  onNext?: () => void;
}

export class RNNStepperView {
  readonly root: HTMLElement;
  private _listeners: Listeners<RNNStepperTraits>;
  private _slider: HTMLInputElement;
  private _label: HTMLElement;
  private _mode: HTMLElement;
  private _status: HTMLElement;
  private _strip: HTMLElement;
  private _scope: HTMLElement;
  private _prev: HTMLButtonElement;
  private _next: HTMLButtonElement;
  private _op: HTMLElement;

  constructor(
    readonly model: WidgetModel<RNNStepperTraits>,
    el: HTMLElement,
    readonly options: RNNStepperOptions = {}
  ) {
    this._listeners = new Listeners(model);
    this.root = h('div', { cls: 'jp-Kernelcore-RNNStepper jp-Kernelcore-view' });
    this._mode = h('span', { cls: 'jp-Kernelcore-badge' });
    this._status = h('span', { cls: 'jp-Kernelcore-status' });
    this._prev = button('\u25c0 prev', () => this.model.send({ type: 'prev' }), { cls: 'jp-Kernelcore-prev', title: 'previous timestep' });
    this._next = button('next \u25b6', () => (this.options.onNext ? this.options.onNext() : this.model.send({ type: 'next' })), { cls: 'jp-Kernelcore-next', title: 'next timestep' });
    this._op = h('span', { cls: 'jp-Kernelcore-muted' });
    this._slider = h('input', { cls: 'jp-Kernelcore-slider', attrs: { type: 'range', min: '0', max: '0', step: '1', 'aria-label': 'timestep' } });
    this._label = h('span', { cls: 'jp-Kernelcore-stepLabel' });
    this._slider.addEventListener('input', () => (this._label.textContent = this._labelText(Number(this._slider.value))));
    this._slider.addEventListener('change', () => this.goto(Number(this._slider.value)));
    this._strip = h('div', { cls: 'jp-Kernelcore-strip' });
    this._scope = h('div', { cls: 'jp-Kernelcore-stepScope' });
    this.root.append(
      h('div', { cls: 'jp-Kernelcore-toolbar' }, [this._mode, this._op, this._prev, this._slider, this._next, this._label, this._status]),
      this._strip,
      this._scope
    );
    el.appendChild(this.root);
    this._listeners.onChange(['mode', 'num_steps', 'timestep', 'status', 'memory_flow', 'rnn_op'], () => this._update());
    this._listeners.onChange(['step_scope'], () => this._renderScope());
    this._update();
    this._renderScope();
  }

  get numSteps(): number {
    return Math.max(0, Number(this.model.get('num_steps') ?? 0) | 0);
  }

  /** The timestep shown; -1 when none is (the recurrent op has not started). */
  get timestep(): number {
    const t = Number(this.model.get('timestep') ?? -1);
    return Number.isFinite(t) ? Math.trunc(t) : -1;
  }

  goto(t: number): void {
    this.model.send({ type: 'goto', t });
  }

  private _labelText(t: number): string {
    const n = this.numSteps;
    return !n ? 'no timesteps' : t < 0 ? `not started (${n} steps)` : `t = ${t} / ${n - 1}`;
  }

  private _update(): void {
    const n = this.numSteps;
    const t = this.timestep;
    this._mode.textContent = String(this.model.get('mode') ?? '');
    this._status.textContent = String(this.model.get('status') ?? '');
    const op = this.model.get('rnn_op');
    this._op.textContent = op ? `op ${String(op)}` : '';
    this._slider.max = String(Math.max(0, n - 1));
    this._slider.value = String(Math.max(0, t));
    this._slider.disabled = n <= 1;
    this._prev.disabled = n === 0 || t <= 0;
    this._next.disabled = n === 0 || t >= n - 1;
    this._slider.classList.toggle('jp-Kernelcore-notStarted', t < 0);
    this._label.textContent = this._labelText(t);
    this._renderStrip();
  }

  private _renderStrip(): void {
    clear(this._strip);
    const n = this.numSteps;
    if (!n) {
      return;
    }
    const t = this.timestep;
    const flows = (Array.isArray(this.model.get('memory_flow')) ? this.model.get('memory_flow') : []) as MemoryFlowJSON[];
    const byT = new Map<number, MemoryFlowJSON[]>();
    flows.forEach(f => {
      const k = Number(f?.t);
      byT.set(k, [...(byT.get(k) ?? []), f]);
    });
    const c = Math.max(0, t);
    const lo = Math.max(0, c - STRIP_WINDOW);
    const hi = Math.min(n - 1, c + STRIP_WINDOW);
    if (lo > 0) {
      this._strip.appendChild(h('span', { cls: 'jp-Kernelcore-muted', text: '\u2026' }));
    }
    for (let k = lo; k <= hi; k++) {
      const f = byT.get(k) ?? [];
      if (k > 0 || f.length) {
        // into step k from step k-1 (or, at k = 0, from the initial state)
        const names = f.map(x => `${String(x.from)} \u2192 ${String(x.to)}`).join(', ');
        this._strip.appendChild(
          h('span', { cls: ['jp-Kernelcore-flow', f.length ? '' : 'jp-Kernelcore-noflow'], title: names || 'no memory carried' }, [
            h('span', { cls: 'jp-Kernelcore-flowNames', text: names }),
            h('span', { cls: 'jp-Kernelcore-arrow', text: '\u27f6' })
          ])
        );
      }
      const box = h('span', { cls: ['jp-Kernelcore-stepBox', k === t ? 'jp-Kernelcore-current' : ''], text: `t=${k}`, attrs: { role: 'button', tabindex: '0' } });
      box.addEventListener('click', () => this.goto(k));
      this._strip.appendChild(box);
    }
    if (hi < n - 1) {
      this._strip.appendChild(h('span', { cls: 'jp-Kernelcore-muted', text: `\u2026 ${n - 1}` }));
    }
  }

  private _renderScope(): void {
    clear(this._scope);
    const s = this.model.get('step_scope') as ScopeJSON | null;
    if (!s || !s.vars) {
      this._scope.appendChild(h('div', { cls: 'jp-Kernelcore-empty', text: 'no step scope' }));
      return;
    }
    const vars: StepVarJSON[] = Array.isArray(s.vars) ? s.vars : Object.values(s.vars as Record<string, StepVarJSON>);
    const o = s.origin ?? {};
    this._scope.appendChild(
      h('div', { cls: 'jp-Kernelcore-muted', text: `scope ${s.id}${o.what ? ` \u00b7 ${String(o.what)}` : ''}${o.timestep !== undefined ? ` \u00b7 t=${o.timestep}` : ''}` })
    );
    const cols = h('div', { cls: 'jp-Kernelcore-columns' });
    const placed = new Set<StepVarJSON>();
    for (const [role, title] of COLUMNS) {
      const col = h('div', { cls: ['jp-Kernelcore-column', `jp-Kernelcore-col-${role}`] }, [h('div', { cls: 'jp-Kernelcore-colTitle', text: title })]);
      vars
        .filter(v => v.role === role || (Array.isArray(v.roles) && v.roles.includes(role)))
        .forEach(v => {
          placed.add(v);
          col.appendChild(this._renderVar(v));
        });
      cols.appendChild(col);
    }
    const others = vars.filter(v => !placed.has(v));
    if (others.length) {
      const col = h('div', { cls: 'jp-Kernelcore-column jp-Kernelcore-col-other' }, [h('div', { cls: 'jp-Kernelcore-colTitle', text: 'other' })]);
      others.forEach(v => col.appendChild(this._renderVar(v)));
      cols.appendChild(col);
    }
    this._scope.appendChild(cols);
  }

  private _renderVar(v: StepVarJSON): HTMLElement {
    const p = v.preview ?? (v as { value?: unknown }).value;
    return h('div', { cls: 'jp-Kernelcore-stepVar' }, [
      h('div', { cls: 'jp-Kernelcore-varName', text: String(v.name) }),
      !isValuePreview(p) ? h('div', { cls: 'jp-Kernelcore-muted', text: v.dtype ? `${v.dtype}${formatShape(v.shape ?? [])}` : String(v.kind ?? '') }) : null,
      isValuePreview(p) ? renderPreview(p) : null
    ]);
  }

  dispose(): void {
    this._listeners.dispose();
    this.root.remove();
  }
}

function render({ model, el }: RenderProps<RNNStepperTraits>): () => void {
  const view = new RNNStepperView(model, el);
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };
