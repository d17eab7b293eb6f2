/**
 * TraceTimeline: the events of a run, filterable by kind, op type and scope, with each op run's
 * duration as a bar and the total time per op type. Clicking an event sets `selected_event` (and
 * sends `{type: "select", seq}`); its fields are shown below the list.
 * The list draws only the rows in view, so a trace of 20,000 events stays quick.
 *
 * Traits: events, filter, selected_event. See docs/frontend-contract.md.
 */
import { clear, formatNs, formatShape, h, short } from '../dom';
import { Listeners, RenderProps, setTrait, WidgetModel } from '../model';
import type { TraceTimelineTraits } from '../widgets.generated';
import { TraceEvent, TraceFilter } from '../schema';
import { TimeAxis } from '../timeaxis';
import { withKernelNotice } from '../restart';

const ROW_H = 22;
const DEFAULT_VIEW_H = 320;
const OVERSCAN = 20;

export interface TraceTimelineOptions {
  local?: boolean;
  /** A note above the list (e.g. that the trace was truncated). */
  note?: string;
}

export function eventLabel(e: TraceEvent): string {
  switch (e.kind) {
    case 'op_run':
    case 'error':
      return `${String(e.op_type ?? '?')}${e.block !== undefined ? ` (block ${e.block} op #${e.op})` : ''}${e.kind === 'error' && e.message ? `: ${String(e.message)}` : ''}`;
    case 'var_create':
      return String(e.name ?? '');
    case 'vars_create':
      return Array.isArray(e.names) ? e.names.map((n) => String(n)).join(', ') : '';
    case 'scope_push':
      return `${String(e.message ?? 'scope')}${e.timestep !== undefined ? ` t=${e.timestep}` : ''} (parent ${e.parent_scope})`;
    case 'step_begin':
    case 'step_end':
      return `t=${e.timestep}`;
    default:
      return e.message !== undefined ? String(e.message) : '';
  }
}

export function matchesFilter(e: TraceEvent, f: TraceFilter | null | undefined): boolean {
  if (!f) {
    return true;
  }
  if (f.kind && e.kind !== f.kind) {
    return false;
  }
  if (f.op_type && e.op_type !== f.op_type) {
    return false;
  }
  if (f.scope !== undefined && f.scope !== null && String(f.scope) !== '' && Number(e.scope) !== Number(f.scope)) {
    return false;
  }
  return true;
}

export class TraceTimelineView {
  readonly root: HTMLElement;
  private _listeners: Listeners<TraceTimelineTraits>;
  private _kind: HTMLSelectElement;
  private _op: HTMLSelectElement;
  private _scope: HTMLSelectElement;
  private _summary: HTMLElement;
  private _count: HTMLElement;
  private _viewport: HTMLElement;
  private _spacer: HTMLElement;
  private _rows: HTMLElement;
  private _detail: HTMLElement;
  private _note: HTMLElement;
  private _filtered: TraceEvent[] = [];
  private _maxDur = 0;
  private _lastRange = '';
  private _eventsSeen: unknown = undefined;
  /** the events on a time axis (zoom, pan, nested timesteps); a click selects like a row does */
  readonly axis = new TimeAxis();

  constructor(
    readonly model: WidgetModel<TraceTimelineTraits>,
    el: HTMLElement,
    readonly options: TraceTimelineOptions = {}
  ) {
    this._listeners = new Listeners(model);
    this.root = h('div', { cls: 'jp-Kernelcore-TraceTimeline jp-Kernelcore-view' });
    this._kind = h('select', { cls: 'jp-Kernelcore-filterKind', attrs: { 'aria-label': 'event kind' } });
    this._op = h('select', { cls: 'jp-Kernelcore-filterOp', attrs: { 'aria-label': 'op type' } });
    this._scope = h('select', { cls: 'jp-Kernelcore-filterScope', attrs: { 'aria-label': 'scope' } });
    for (const s of [this._kind, this._op, this._scope]) {
      s.addEventListener('change', () => this._filterFromControls());
    }
    this._count = h('span', { cls: 'jp-Kernelcore-count' });
    this._summary = h('div', { cls: 'jp-Kernelcore-opSummary' });
    this._viewport = h('div', { cls: 'jp-Kernelcore-eventViewport', attrs: { tabindex: '0' } });
    this._spacer = h('div', { cls: 'jp-Kernelcore-eventSpacer' });
    this._rows = h('div', { cls: 'jp-Kernelcore-eventRows' });
    this._viewport.append(this._spacer, this._rows);
    this._viewport.addEventListener('scroll', () => this._drawRows());
    this._viewport.addEventListener('keydown', ev => this._onKey(ev));
    this._detail = h('div', { cls: 'jp-Kernelcore-eventDetail' });
    this.root.append(
      h('div', { cls: 'jp-Kernelcore-toolbar' }, [this._kind, this._op, this._scope, this._count]),
      (this._note = h('div', { cls: 'jp-Kernelcore-note' })),
      this._summary,
      this.axis.el,
      this._viewport,
      this._detail
    );
    el.appendChild(this.root);
    this._listeners.onChange(['events', 'truncated'], () => this.refresh());
    this._listeners.onChange(['filter'], () => this.refresh());
    this.axis.onSelect = seq => this.select(seq);
    this._listeners.onChange(['selected_event'], () => {
      this.axis.select(Number(this.model.get('selected_event') ?? -1));
      this._lastRange = '';
      this._drawRows();
      this._drawDetail();
      this.scrollToSelected();
    });
    this.refresh();
  }

  get events(): TraceEvent[] {
    const e = this.model.get('events');
    return Array.isArray(e) ? (e as TraceEvent[]) : [];
  }

  get filter(): TraceFilter {
    const f = this.model.get('filter');
    return f && typeof f === 'object' ? (f as TraceFilter) : {};
  }

  /** The events that pass the filter, in order. */
  get filtered(): TraceEvent[] {
    return this._filtered;
  }

  refresh(): void {
    const events = this.events;
    if (events !== this._eventsSeen) {
      this._eventsSeen = events;
      this._fillControls(events);
      this.axis.setEvents(events);
    }
    const f = this.filter;
    this._kind.value = f.kind ?? '';
    this._op.value = f.op_type ?? '';
    this._scope.value = f.scope === undefined || f.scope === null ? '' : String(f.scope);
    this._filtered = events.filter(e => matchesFilter(e, f));
    this._maxDur = this._filtered.reduce((m, e) => Math.max(m, Number(e.dur_ns) || 0), 0);
    this._count.textContent = `${this._filtered.length} of ${events.length} events`;
    const cut = Number(this.model.get('truncated') ?? 0);
    this._note.textContent = this.options.note ?? (cut > 0 ? `truncated: the first ${events.length} events are shown, ${cut} more were left out` : '');
    this._spacer.style.height = `${this._filtered.length * ROW_H}px`;
    this._lastRange = '';
    this._drawSummary();
    this._drawRows();
    this._drawDetail();
  }

  private _fillControls(events: TraceEvent[]): void {
    const fill = (sel: HTMLSelectElement, all: string, values: string[]) => {
      clear(sel);
      sel.appendChild(h('option', { text: all, attrs: { value: '' } }));
      values.forEach(v => sel.appendChild(h('option', { text: v, attrs: { value: v } })));
    };
    const kinds = new Set<string>();
    const ops = new Set<string>();
    const scopes = new Set<number>();
    events.forEach(e => {
      kinds.add(String(e.kind));
      if (e.op_type !== undefined) {
        ops.add(String(e.op_type));
      }
      if (e.scope !== undefined && e.scope !== null) {
        scopes.add(Number(e.scope));
      }
    });
    fill(this._kind, 'all kinds', [...kinds].sort());
    fill(this._op, 'all ops', [...ops].sort());
    fill(
      this._scope,
      'all scopes',
      [...scopes].sort((a, b) => a - b).map(s => String(s))
    );
  }

  private _filterFromControls(): void {
    const f: TraceFilter = { kind: this._kind.value, op_type: this._op.value, scope: this._scope.value === '' ? null : Number(this._scope.value) };
    setTrait(this.model, 'filter', f);
  }

  private _drawSummary(): void {
    clear(this._summary);
    const per = new Map<string, { n: number; ns: number }>();
    let total = 0;
    this._filtered.forEach(e => {
      if (e.kind !== 'op_run') {
        return;
      }
      const k = String(e.op_type ?? '?');
      const cur = per.get(k) ?? { n: 0, ns: 0 };
      cur.n++;
      cur.ns += Number(e.dur_ns) || 0;
      total += Number(e.dur_ns) || 0;
      per.set(k, cur);
    });
    if (!per.size) {
      return;
    }
    const rows = [...per.entries()].sort((a, b) => b[1].ns - a[1].ns || b[1].n - a[1].n).slice(0, 10);
    const max = Math.max(1, ...rows.map(r => r[1].ns));
    this._summary.appendChild(h('div', { cls: 'jp-Kernelcore-muted', text: `op time ${formatNs(total)} in ${[...per.values()].reduce((s, r) => s + r.n, 0)} runs` }));
    for (const [op, r] of rows) {
      const bar = h('span', { cls: 'jp-Kernelcore-bar' });
      bar.style.width = `${(100 * r.ns) / max}%`;
      this._summary.appendChild(
        h('div', { cls: 'jp-Kernelcore-summaryRow' }, [
          h('span', { cls: 'jp-Kernelcore-summaryName', text: op, title: op }),
          h('span', { cls: 'jp-Kernelcore-barTrack' }, [bar]),
          h('span', { cls: 'jp-Kernelcore-muted', text: `${formatNs(r.ns)} \u00d7${r.n}` })
        ])
      );
    }
  }

  private _visibleRange(): [number, number] {
    const height = this._viewport.clientHeight || DEFAULT_VIEW_H;
    const top = this._viewport.scrollTop || 0;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(this._filtered.length, Math.ceil((top + height) / ROW_H) + OVERSCAN);
    return [first, last];
  }

  private _drawRows(): void {
    const [first, last] = this._visibleRange();
    const sig = `${first}:${last}:${this._filtered.length}`;
    if (sig === this._lastRange) {
      return;
    }
    this._lastRange = sig;
    clear(this._rows);
    this._rows.style.transform = `translateY(${first * ROW_H}px)`;
    const selected = Number(this.model.get('selected_event') ?? -1);
    for (let i = first; i < last; i++) {
      const e = this._filtered[i];
      const bar = h('span', { cls: 'jp-Kernelcore-bar' });
      const dur = Number(e.dur_ns) || 0;
      bar.style.width = this._maxDur > 0 ? `${(100 * dur) / this._maxDur}%` : '0';
      const kindCls = /^[a-z_]+$/.test(String(e.kind)) ? `jp-Kernelcore-ev-${e.kind}` : '';
      const row = h('div', { cls: ['jp-Kernelcore-event', kindCls, e.seq === selected ? 'jp-Kernelcore-selected' : ''], attrs: { role: 'row' } }, [
        h('span', { cls: 'jp-Kernelcore-seq', text: String(e.seq) }),
        h('span', { cls: 'jp-Kernelcore-kind', text: String(e.kind) }),
        h('span', { cls: 'jp-Kernelcore-evLabel', text: eventLabel(e), title: eventLabel(e) }),
        h('span', { cls: 'jp-Kernelcore-evScope', text: e.scope !== undefined ? `s${e.scope}` : '' }),
        h('span', { cls: 'jp-Kernelcore-barTrack' }, [bar]),
        h('span', { cls: 'jp-Kernelcore-dur', text: dur ? formatNs(dur) : '' })
      ]);
      row.style.height = `${ROW_H}px`;
      row.addEventListener('click', () => this.select(e.seq));
      this._rows.appendChild(row);
    }
  }

  /** Select event `seq` (as a click does). */
  select(seq: number): void {
    if (!this.options.local) {
      this.model.send({ type: 'select', seq });
    }
    setTrait(this.model, 'selected_event', seq);
  }

  scrollToSelected(): void {
    const seq = Number(this.model.get('selected_event') ?? -1);
    const i = this._filtered.findIndex(e => e.seq === seq);
    if (i < 0) {
      return;
    }
    const height = this._viewport.clientHeight || DEFAULT_VIEW_H;
    const top = i * ROW_H;
    if (top < this._viewport.scrollTop || top + ROW_H > this._viewport.scrollTop + height) {
      this._viewport.scrollTop = Math.max(0, top - height / 2);
      this._drawRows();
    }
  }

  private _onKey(ev: KeyboardEvent): void {
    if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') {
      return;
    }
    ev.preventDefault();
    const seq = Number(this.model.get('selected_event') ?? -1);
    const i = this._filtered.findIndex(e => e.seq === seq);
    const j = Math.min(this._filtered.length - 1, Math.max(0, i + (ev.key === 'ArrowDown' ? 1 : -1)));
    if (this._filtered[j]) {
      this.select(this._filtered[j].seq);
    }
  }

  private _drawDetail(): void {
    clear(this._detail);
    const seq = Number(this.model.get('selected_event') ?? -1);
    const e = seq >= 0 ? this.events.find(x => x.seq === seq) : undefined;
    if (!e) {
      return;
    }
    const dl = h('dl', { cls: 'jp-Kernelcore-kv' });
    for (const [k, v] of Object.entries(e)) {
      if (k === 'inputs' || k === 'outputs') {
        continue;
      }
      dl.append(h('dt', { text: k }), h('dd', { text: k.endsWith('_ns') ? `${formatNs(Number(v))} (${v})` : typeof v === 'string' ? v : short(v, 200) }));
    }
    this._detail.appendChild(dl);
    for (const slot of ['inputs', 'outputs'] as const) {
      const io = e[slot];
      if (!Array.isArray(io) || !io.length) {
        continue;
      }
      const table = h('table', { cls: 'jp-Kernelcore-ioTable' }, [h('caption', { text: slot })]);
      io.forEach(row => {
        const [s, name, shape, dtype] = Array.isArray(row) ? row : [];
        table.appendChild(
          h('tr', {}, [h('td', { text: String(s ?? '') }), h('td', { text: String(name ?? '') }), h('td', { text: `${dtype ?? ''}${shape ? formatShape(shape) : ''}` })])
        );
      });
      this._detail.appendChild(table);
    }
  }

  dispose(): void {
    this._listeners.dispose();
    this.root.remove();
  }
}

function render({ model, el }: RenderProps<TraceTimelineTraits>): () => void {
  const view = new TraceTimelineView(model, el);
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };
