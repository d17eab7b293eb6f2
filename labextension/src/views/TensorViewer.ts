/**
 * TensorViewer: one tensor up close. Two selects choose the axes shown down and across; a slider per other
 * axis picks the index there; the slice Python sends is drawn as a heatmap (a diverging ramp in diff mode) with
 * NaN and +-Inf cells marked by glyphs; the value classes (negative / zero / positive / NaN / +Inf / -Inf) as a
 * bar with counts; "diff" shows the value minus its previous value; "send to notebook" binds the value or the
 * slice to a name in the kernel.
 *
 * A name already defined in the notebook is never replaced unasked: Python answers with `name_taken`
 * ({taken, proposed, what}); the box then holds the proposed free name and an "Overwrite" button sends the
 * same request again with `overwrite: true`, the person's confirmation.
 *
 * A colour legend under the heat map gives the scale (the shown slice's min and max). A viewer of a paused
 * session's variable shows where the value is from (`position`) and, in the present (`editable`), edits it:
 * Zero, Replace with a notebook variable, or a cell after a double-click (tensoredit.ts); "Copy value" copies a
 * NumPy literal.
 *
 * Traits: name, shape, dtype, place, axes, index, diff, has_previous, slice, health, status, name_taken,
 * position, editable, edits.
 * Messages: {type: "view", axes, index, diff}, {type: "send", name, what: "value" | "slice", overwrite?},
 * {type: "edit", what, ...}, {type: "copy"}; from Python: {type: "copied", text}.
 */
import { button, clear, formatNumber, formatShape, h } from '../dom';
import { Listeners, RenderProps, WidgetModel } from '../model';
import type { SentNameTaken, TensorHealth as Health, TensorSlice } from '../protocol';
import type { TensorViewerTraits } from '../widgets.generated';
import { colorLegend, divergingColor, rampColor } from '../colorramp';
import { sampleNumber } from '../preview';
import { withKernelNotice } from '../restart';
import { EditBar, EditMessage, toClipboard } from './tensoredit';

export type { Health, TensorSlice };

/** A send whose name was taken: nothing was bound; `proposed` is free (null: none found). */
export type NameTaken = SentNameTaken;

export function nameTaken(x: unknown): NameTaken | null {
  const t = x as NameTaken | null;
  return t && typeof t === 'object' && typeof t.taken === 'string' ? t : null;
}

export const HEALTH_CLASSES: Array<[keyof Health, string]> = [
  ['negative', 'negative'],
  ['zero', 'zero'],
  ['positive', 'positive'],
  ['nan', 'NaN'],
  ['pos_inf', '+Inf'],
  ['neg_inf', '-Inf']
];

/** The glyph a non-finite cell gets (finite cells get none). */
export function glyph(v: number): string {
  return Number.isNaN(v) ? 'N' : v === Infinity ? '+' : v === -Infinity ? '\u2212' : '';
}

/**
 * The (row, col) of the heat-map cell under a pointer, or null outside it. Measured against the canvas's drawn box,
 * not its pixel size: CSS may stretch or shrink the canvas, so one cell on screen is rect.height / rows tall.
 */
export function cellUnderPointer(
  rect: { left: number; top: number; width: number; height: number },
  clientX: number,
  clientY: number,
  rows: number,
  cols: number
): [number, number] | null {
  if (!rect.width || !rect.height || !rows || !cols) {
    return null;
  }
  const i = Math.floor(((clientY - rect.top) / rect.height) * rows);
  const j = Math.floor(((clientX - rect.left) / rect.width) * cols);
  return i < 0 || j < 0 || i >= rows || j >= cols ? null : [i, j];
}

/** A cell's colour: the ramp over [lo, hi] (diverging around 0 in diff mode); fixed colours for NaN/Inf. */
export function cellColor(v: number, lo: number, hi: number, diverging: boolean): string {
  if (Number.isNaN(v)) {
    return 'rgb(214,39,140)';
  }
  if (!isFinite(v)) {
    return v > 0 ? 'rgb(200,30,30)' : 'rgb(30,60,200)';
  }
  if (diverging) {
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    return divergingColor(v / m);
  }
  return rampColor(hi > lo ? (v - lo) / (hi - lo) : 0.5);
}

export class TensorViewerView {
  readonly root: HTMLElement;
  private _listeners: Listeners<TensorViewerTraits>;
  private _head: HTMLElement;
  private _controls: HTMLElement;
  private _health: HTMLElement;
  private _canvas: HTMLCanvasElement;
  private _cell: HTMLElement;
  private _status: HTMLElement;
  private _sendName: HTMLInputElement;
  private _taken: HTMLElement;
  private _legend: HTMLElement;
  private _copied: HTMLElement;
  readonly edits: EditBar;

  constructor(
    readonly model: WidgetModel<TensorViewerTraits>,
    el: HTMLElement
  ) {
    this._listeners = new Listeners(model);
    this.root = h('div', { cls: 'jp-Kernelcore-TensorViewer jp-Kernelcore-view' });
    this._head = h('div', { cls: 'jp-Kernelcore-tvHead' });
    this._controls = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-tvControls' });
    this._health = h('div', { cls: 'jp-Kernelcore-tvHealth', attrs: { role: 'img' } });
    this._canvas = h('canvas', { cls: 'jp-Kernelcore-tvCanvas' });
    this._cell = h('div', { cls: 'jp-Kernelcore-tvCell jp-Kernelcore-muted' });
    this._status = h('div', { cls: 'jp-Kernelcore-status' });
    this._sendName = h('input', { cls: 'jp-Kernelcore-tvSendName', attrs: { type: 'text', value: 'value', 'aria-label': 'name in the notebook' } });
    const send = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-tvSend' }, [
      h('span', { text: 'send to notebook as' }),
      this._sendName,
      button('value', () => this.send('value'), { cls: 'jp-Kernelcore-tvSendValue', title: 'bind the whole value (a host copy) to this name' }),
      button('slice', () => this.send('slice'), { cls: 'jp-Kernelcore-tvSendSlice', title: 'bind the shown slice to this name' })
    ]);
    this._taken = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-tvTaken', attrs: { role: 'alert' } });
    this._legend = h('div', { cls: 'jp-Kernelcore-tvLegendBox' });
    this._copied = h('div', { cls: 'jp-Kernelcore-tvCopiedBox' });
    this.edits = new EditBar(msg => this._edit(msg));
    this.root.append(this._head, this._controls, this._health, this._canvas, this._legend, this._cell, this.edits.cellEditor, this.edits.root, this._copied, send, this._taken, this._status);
    el.appendChild(this.root);
    this._canvas.addEventListener('mousemove', ev => this._hover(ev));
    this._canvas.addEventListener('dblclick', ev => this._editCellAt(ev));
    this.model.on('msg:custom', this._onCustom);
    this._listeners.onChange(['name', 'shape', 'dtype', 'place', 'axes', 'index', 'diff', 'has_previous', 'position', 'editable'], () => this.refresh());
    this._listeners.onChange(['slice', 'health', 'status'], () => this.refresh());
    this._listeners.onChange(['slice'], () => (this._cell.textContent = '')); // the hovered cell's value was the old one
    this._listeners.onChange(['name_taken'], () => this._showTaken());
    this.refresh();
    this._showTaken();
  }

  get shape(): number[] {
    const s = this.model.get('shape');
    return Array.isArray(s) ? s.map(Number) : [];
  }

  get axes(): [number, number] {
    const a = this.model.get('axes');
    return Array.isArray(a) && a.length === 2 ? [Number(a[0]), Number(a[1])] : [0, 1];
  }

  get index(): number[] {
    const i = this.model.get('index');
    return Array.isArray(i) ? i.map(Number) : [];
  }

  get slice(): TensorSlice | null {
    const s = this.model.get('slice');
    return s && typeof s === 'object' && Array.isArray((s as TensorSlice).data) ? (s as TensorSlice) : null;
  }

  /** Ask Python for another view (it answers by setting slice and health). */
  view(change: { axes?: [number, number]; index?: number[]; diff?: boolean }): void {
    this.model.send({ type: 'view', axes: change.axes ?? this.axes, index: change.index ?? this.index, diff: change.diff ?? !!this.model.get('diff') });
  }

  send(what: 'value' | 'slice'): void {
    this.model.send({ type: 'send', name: this._sendName.value.trim(), what });
  }

  /** Replace the taken name: the person pressed "Overwrite", so the request says it was confirmed. */
  overwrite(taken: NameTaken): void {
    this.model.send({ type: 'send', name: taken.taken, what: taken.what, overwrite: true });
  }

  /** The last send's name was taken: offer the free name in the box and an explicit Overwrite. */
  private _showTaken(): void {
    clear(this._taken);
    const taken = nameTaken(this.model.get('name_taken'));
    if (!taken) {
      return;
    }
    if (taken.proposed) {
      this._sendName.value = taken.proposed;
    }
    this._taken.append(
      h('span', {
        text:
          `'${taken.taken}' is already defined in the notebook: nothing was sent. ` +
          (taken.proposed ? `Send as '${taken.proposed}' (in the box), or ` : 'Choose another name, or ')
      }),
      button(`overwrite '${taken.taken}'`, () => this.overwrite(taken), { cls: 'jp-Kernelcore-tvOverwrite', title: `replace the notebook's '${taken.taken}' with this ${taken.what}` })
    );
  }

  refresh(): void {
    const shape = this.shape;
    clear(this._head);
    const position = String(this.model.get('position') ?? '');
    this._head.append(
      h('span', { cls: 'jp-Kernelcore-varName', text: String(this.model.get('name') ?? '') || 'tensor' }),
      h('span', { cls: 'jp-Kernelcore-muted', text: ` ${String(this.model.get('dtype') ?? '')}${formatShape(shape)} on ${String(this.model.get('place') ?? '')}` })
    );
    if (position) {
      this._head.appendChild(h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-tvPosition', text: ` at ${position}` }));
    }
    this.edits.setEditable(!!this.model.get('editable'));
    this._drawControls(shape);
    this._drawHealth();
    this._drawSlice();
    this._drawLegend();
    this._status.textContent = String(this.model.get('status') ?? '');
  }

  private _drawLegend(): void {
    clear(this._legend);
    const s = this.slice;
    if (!s || !s.rows || !s.cols) {
      return;
    }
    const lo = s.min ?? 0;
    const hi = s.max ?? 0;
    const diverging = !!this.model.get('diff');
    if (diverging) {
      const m = Math.max(Math.abs(lo), Math.abs(hi));
      this._legend.appendChild(colorLegend(-m, m, t => divergingColor(2 * t - 1), { markZero: true }));
    } else {
      this._legend.appendChild(colorLegend(s.min, s.max, rampColor));
    }
  }

  private _edit(msg: EditMessage): void {
    this.model.send(msg);
  }

  private _onCustom = (msg: unknown): void => this._fromKernel(msg);

  private _fromKernel(msg: unknown): void {
    const m = msg as { type?: string; text?: unknown };
    if (m && m.type === 'copied' && typeof m.text === 'string') {
      void toClipboard(m.text, this._copied);
    }
  }

  /** The tensor index of slice cell (i, j) (the shown axes' entries from the cell, the others from `index`). */
  cellIndex(i: number, j: number): number[] {
    const s = this.slice;
    const shape = this.shape;
    const [r, c] = this.axes;
    const idx = shape.length ? this.index.slice() : [];
    if (s && shape.length === 1) {
      idx[0] = j * s.col_step;
    } else if (s && shape.length >= 2) {
      idx[r] = i * s.row_step;
      idx[c] = j * s.col_step;
    }
    return idx;
  }

  private _editCellAt(ev: MouseEvent): void {
    const s = this.slice;
    if (!s || !this.model.get('editable') || this.model.get('diff')) {
      return; // a diff's cells are no values to set
    }
    const at = cellUnderPointer(this._canvas.getBoundingClientRect(), ev.clientX, ev.clientY, s.rows, s.cols);
    if (at) {
      const v = s.data[at[0]]?.[at[1]];
      this.edits.openCell(this.cellIndex(at[0], at[1]), typeof v === 'number' ? String(v) : String(v ?? ''));
    }
  }

  private _drawControls(shape: number[]): void {
    clear(this._controls);
    const [r, c] = this.axes;
    if (shape.length >= 2) {
      const pick = (label: string, value: number, onPick: (ax: number) => void) => {
        const sel = h('select', { cls: `jp-Kernelcore-tvAxis-${label}`, attrs: { 'aria-label': `${label} axis` } });
        shape.forEach((d, ax) => sel.appendChild(h('option', { text: `axis ${ax} (${d})`, attrs: { value: String(ax) } })));
        sel.value = String(value);
        sel.addEventListener('change', () => onPick(Number(sel.value)));
        return h('label', {}, [`${label} `, sel]);
      };
      this._controls.append(
        pick('rows', r, ax => this.view({ axes: ax === c ? [ax, r] : [ax, c] })),
        pick('cols', c, ax => this.view({ axes: ax === r ? [c, ax] : [r, ax] }))
      );
      shape.forEach((d, ax) => {
        if (ax === r || ax === c) {
          return;
        }
        const idx = this.index[ax] ?? 0;
        const slider = h('input', { cls: 'jp-Kernelcore-tvSlider', attrs: { type: 'range', min: '0', max: String(Math.max(0, d - 1)), value: String(idx), 'aria-label': `index on axis ${ax}`, 'data-axis': String(ax) } });
        const shown = h('span', { cls: 'jp-Kernelcore-muted', text: `${idx}` });
        slider.addEventListener('input', () => (shown.textContent = slider.value));
        slider.addEventListener('change', () => {
          const index = this.index.slice();
          index[ax] = Number(slider.value);
          this.view({ index });
        });
        this._controls.appendChild(h('label', {}, [`axis ${ax} `, slider, shown]));
      });
    }
    if (this.model.get('has_previous')) {
      const box = h('input', { cls: 'jp-Kernelcore-tvDiff', attrs: { type: 'checkbox', 'aria-label': 'difference from the previous value' } });
      box.checked = !!this.model.get('diff');
      box.addEventListener('change', () => this.view({ diff: box.checked }));
      this._controls.appendChild(h('label', { title: 'show the value minus its previous value (previous timestep or run)' }, [box, ' diff vs previous']));
    }
  }

  private _drawHealth(): void {
    clear(this._health);
    const hl = this.model.get('health') as Health | undefined;
    if (!hl || typeof hl !== 'object' || !hl.total) {
      return;
    }
    const bar = h('div', { cls: 'jp-Kernelcore-tvHealthBar' });
    const legend = h('div', { cls: 'jp-Kernelcore-tvHealthLegend' });
    for (const [key, label] of HEALTH_CLASSES) {
      const n = Number(hl[key] ?? 0);
      if (n > 0) {
        const seg = h('span', { cls: `jp-Kernelcore-tvClass jp-Kernelcore-tvClass-${key}`, title: `${label}: ${n}` });
        seg.style.flexGrow = String(n);
        bar.appendChild(seg);
      }
      legend.appendChild(h('span', { cls: `jp-Kernelcore-tvCount jp-Kernelcore-tvCount-${key}`, text: `${label} ${n}` }));
    }
    this._health.setAttribute('aria-label', HEALTH_CLASSES.map(([k, l]) => `${l} ${hl[k]}`).join(', '));
    this._health.append(bar, legend);
  }

  private _drawSlice(): void {
    const s = this.slice;
    const ctx = this._canvas.getContext ? this._canvas.getContext('2d') : null;
    if (!s || !s.rows || !s.cols) {
      this._canvas.width = this._canvas.height = 0;
      return;
    }
    const cell = Math.max(2, Math.min(24, Math.floor(480 / Math.max(s.rows, s.cols))));
    this._canvas.width = s.cols * cell;
    this._canvas.height = s.rows * cell;
    this._canvas.dataset.cell = String(cell);
    if (!ctx) {
      return; // no canvas in this environment (tests): the traits are still right
    }
    const lo = s.min ?? 0;
    const hi = s.max ?? 0;
    const diverging = !!this.model.get('diff');
    s.data.forEach((row, i) =>
      row.forEach((x, j) => {
        const v = sampleNumber(x);
        ctx.fillStyle = cellColor(v, lo, hi, diverging);
        ctx.fillRect(j * cell, i * cell, cell, cell);
        const g = glyph(v);
        if (g && cell >= 8) {
          ctx.fillStyle = '#fff';
          ctx.font = `${Math.floor(cell * 0.8)}px sans-serif`;
          ctx.textAlign = 'center';
          ctx.textBaseline = 'middle';
          ctx.fillText(g, j * cell + cell / 2, i * cell + cell / 2);
        }
      })
    );
  }

  private _hover(ev: MouseEvent): void {
    const s = this.slice;
    if (!s) {
      return;
    }
    const at = cellUnderPointer(this._canvas.getBoundingClientRect(), ev.clientX, ev.clientY, s.rows, s.cols);
    if (at) {
      this._cell.textContent = this.describeCell(at[0], at[1]);
    }
  }

  /** "[index...] = value" of slice cell (i, j), in the tensor's own indices. */
  describeCell(i: number, j: number): string {
    const s = this.slice;
    if (!s) {
      return '';
    }
    const idx = this.cellIndex(i, j);
    const v = s.data[i]?.[j];
    return `[${idx.join(', ')}] = ${typeof v === 'number' ? formatNumber(v) : String(v)}`;
  }

  dispose(): void {
    this._listeners.dispose();
    this.model.off('msg:custom', this._onCustom as (...args: unknown[]) => void);
    this.root.remove();
  }
}

function render({ model, el }: RenderProps<TensorViewerTraits>): () => void {
  const view = new TensorViewerView(model, el);
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };
