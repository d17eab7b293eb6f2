/**
 * The tensor viewer opened from the sidebar's Variables ("View"): views/TensorViewer.ts over a local model that
 * the `kernelcore.debugger` comm feeds (`tensor`: the slice and value classes of a variable at the session's
 * cursor; `tensor_send`: "send to notebook"). It follows the cursor: after every move of the session it asks
 * again, and says so when the variable does not exist at the new position, or when the value shown is another
 * scope's (a new timestep's step has not written it yet: the previous step's is shown, and the header says so);
 * until the answer comes the old value is taken down, so it never stands under the new position. "Copy value" copies the shown slice as a NumPy
 * literal when it is the whole tensor (no stride, at most two axes). In the present of a running session
 * the view's edits (Zero, Replace with a notebook variable, a double-clicked cell) go as `tensor_set`
 * (sess.set_value: the run forks), and the value is asked for again. index.ts puts it in a MainAreaWidget.
 */
import { Widget } from '@lumino/widgets';
import { h } from './dom';
import { LocalModel } from './model';
import type { TensorViewerTraits } from './widgets.generated';
import { NameTaken, ScopeVars, TensorSent, TensorSet, TensorView } from './protocol';
import { IKernelcoreDebuggerModel } from './tokens';
import { TensorViewerView } from './views/TensorViewer';
import { toClipboard } from './views/tensoredit';
import { sampleNumber } from './preview';

export class TensorPanel extends Widget {
  readonly local: LocalModel<TensorViewerTraits>;
  readonly view: TensorViewerView;
  private _where: HTMLElement;
  private _asked: string | null = null; // the cursor (session id, pause) the shown value is from
  private _busy = false;
  private _again = false;

  constructor(
    private _dbg: IKernelcoreDebuggerModel,
    readonly varName: string,
    readonly scope: number | null
  ) {
    super();
    this.addClass('jp-Kernelcore-tensorPanel');
    this.id = `jp-kernelcore-tensor-${encodeURIComponent(varName).replace(/[^A-Za-z0-9_-]/g, '_')}`;
    this.title.label = `${varName} (tensor)`;
    this.title.caption = `${varName}: its value at the kernelcore debugger's cursor`;
    this._where = h('div', { cls: 'jp-Kernelcore-tpWhere jp-Kernelcore-muted' });
    this.node.appendChild(this._where);
    this.local = new LocalModel<TensorViewerTraits>({ name: varName, shape: [], dtype: '', place: '', axes: [0, 1], index: [], diff: false, has_previous: false, slice: {}, health: {}, name_taken: {}, status: 'asking the kernel\u2026', position: '', editable: false, edits: 0 });
    this.local.onSend = content => this._fromView(content);
    this.view = new TensorViewerView(this.local, this.node);
    this._dbg.changed.connect(this._follow, this);
    void this.fetch();
  }

  /** Ask for the value at the cursor (with the view's axes, index and diff). */
  async fetch(change: { axes?: number[]; index?: number[]; diff?: boolean } = {}): Promise<void> {
    const s = this._dbg.session;
    if (!s) {
      this._where.textContent = this._dbg.statusText || 'no debug session';
      this.node.dataset.exists = 'false';
      return;
    }
    if (this._busy) {
      this._again = true; // one more when this one is answered (the cursor moved meanwhile)
      return;
    }
    this._busy = true;
    this._asked = `${s.id}:${s.pause}`;
    const args = {
      name: this.varName,
      scope: this.scope,
      axes: change.axes ?? (this.local.get('axes') as number[]),
      index: change.index ?? ((this.local.get('index') as number[])?.length ? (this.local.get('index') as number[]) : null),
      diff: change.diff ?? !!this.local.get('diff')
    };
    try {
      const r = await this._dbg.request('tensor', args);
      if (!r.ok || !r.result) {
        this.local.set('status', `cannot show ${this.varName}: ${r.error ?? 'no answer'}`);
        return;
      }
      this._apply(r.result as TensorView);
    } finally {
      this._busy = false;
      if (this._again) {
        this._again = false;
        void this.fetch();
      }
    }
  }

  /**
   * The scope the value came from, when the cursor's op cannot see it (null when it can): the kernel falls
   * back to the scope the panel was opened from, or to any scope holding the name, so at the start of a new
   * timestep, before the step writes it, the value is the previous step's, and the header says so.
   */
  private _elsewhere(v: TensorView): ScopeVars | null {
    const scopes = this._dbg.session?.variables ?? [];
    const from = scopes.find(s => s.scope === v.scope);
    return v.exists && from && !from.visible ? from : null;
  }

  private _apply(v: TensorView): void {
    const elsewhere = this._elsewhere(v);
    this._where.textContent = elsewhere
      ? `at ${v.position_text}: '${this.varName}' has no value the cursor's op sees; shown: ${elsewhere.label}`
      : `at ${v.position_text}` + (v.exists && v.scope !== null ? `, scope ${v.scope}` : '');
    this.node.dataset.elsewhere = String(!!elsewhere);
    this.local.set('position', elsewhere ? `${elsewhere.label}, not the cursor's` : v.position_text);
    const s = this._dbg.session;
    this.local.set('editable', !elsewhere && !!s && s.at_present && !s.finished);
    this.node.dataset.exists = String(v.exists);
    this.node.dataset.pause = String(v.pause);
    const m = this.local;
    const cell = this.node.querySelector('.jp-Kernelcore-tvCell');
    if (cell) {
      cell.textContent = ''; // the hovered cell's value was the old one
    }
    if (!v.exists) {
      m.set('slice', {});
      m.set('health', {});
      m.set('shape', []);
      m.set('has_previous', false);
      m.set('status', v.status);
      return;
    }
    for (const key of ['shape', 'dtype', 'place', 'axes', 'index', 'diff', 'has_previous'] as const) {
      m.set(key, v[key]);
    }
    m.set('slice', v.slice ?? {});
    m.set('health', v.health ?? {});
    m.set('status', v.status);
  }

  private _fromView(content: any): void {
    if (content?.type === 'view') {
      void this.fetch({ axes: content.axes, index: content.index, diff: !!content.diff });
    } else if (content?.type === 'send') {
      void this.send(String(content.name ?? ''), content.what === 'slice' ? 'slice' : 'value', content.overwrite === true);
    } else if (content?.type === 'copy') {
      this.copy();
    } else if (content?.type === 'edit') {
      void this.edit(content);
    }
  }

  /** An edit the person asked for (the view's buttons): set where the session waits, then shown. */
  async edit(content: { what?: unknown; index?: unknown; value?: unknown; source?: unknown }): Promise<void> {
    const edit = content.what === 'cell' || content.what === 'replace' ? content.what : 'zero';
    const r = await this._dbg.request('tensor_set', {
      name: this.varName,
      edit,
      index: Array.isArray(content.index) ? content.index.map(Number) : null,
      value: typeof content.value === 'string' ? content.value : null,
      source: typeof content.source === 'string' ? content.source : null
    });
    const set = r.ok ? (r.result as TensorSet | null) : null;
    if (!set) {
      this.local.set('status', `not edited: ${r.error ?? 'no answer'}`);
      return;
    }
    await this.fetch();
    this.local.set('status', `set '${set.set}' (${set.edit}) at trace event ${set.event}` + (set.forked ? '; the run forked: the unedited twin runs on without it' : ''));
  }

  /** Copy the value as a NumPy literal: only when the shown slice is all of it. */
  copy(): void {
    const text = wholeLiteral(this.local.get('slice'), this.local.get('shape') as number[], String(this.local.get('dtype') ?? ''));
    const box = this.node.querySelector('.jp-Kernelcore-tvCopiedBox') as HTMLElement | null;
    if (text === null || !box) {
      this.local.set('status', 'not copied: the shown slice is not the whole tensor (send it to the notebook instead)');
      return;
    }
    void toClipboard(text, box).then(() => this.local.set('status', 'copied the value as a NumPy literal'));
  }

  /** "Send to notebook": a defined name is replaced only with `overwrite`, sent after the person confirmed
   * (the view's Overwrite button); otherwise the kernel answers NameTaken and the view offers its free name. */
  async send(target: string, what: 'value' | 'slice', overwrite = false): Promise<void> {
    const r = await this._dbg.request('tensor_send', {
      name: this.varName,
      scope: this.scope,
      target,
      what,
      overwrite,
      axes: this.local.get('axes'),
      index: this.local.get('index'),
      diff: !!this.local.get('diff')
    });
    const sent = r.ok ? (r.result as TensorSent | null) : null;
    const taken = !r.ok && r.result && 'taken' in r.result ? (r.result as NameTaken) : null;
    this.local.set('name_taken', taken ? { ...taken, what } : {});
    this.local.set(
      'status',
      sent ? `sent the ${sent.what} to the notebook as '${sent.sent}'` + (sent.overwritten ? ` (replacing the old '${sent.sent}', as confirmed)` : '') : `not sent: ${r.error ?? 'failed'}`
    );
  }

  /** After every state the kernel pushes: a new cursor means a new value. */
  private _follow(): void {
    const s = this._dbg.session;
    const at = s ? `${s.id}:${s.pause}` : null;
    if (at !== this._asked) {
      this._takeDown();
      void this.fetch();
    }
  }

  /** The cursor moved: the shown value was the old position's, so it goes until the new one arrives. */
  private _takeDown(): void {
    this._where.textContent = 'reading the value at the new position\u2026';
    this.node.dataset.exists = 'pending';
    this.local.set('slice', {});
    this.local.set('health', {});
    this.local.set('status', 'reading\u2026');
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._dbg.changed.disconnect(this._follow, this);
    this.view.dispose();
    super.dispose();
  }
}

const MAX_LITERAL_CELLS = 10_000;

/** `np.array([...], dtype=np.<dtype>)` of a slice that is the whole tensor (at most two axes, no stride); else null. */
export function wholeLiteral(slice: unknown, shape: number[], dtype: string): string | null {
  const s = slice as TensorViewerTraits['slice'] & { data?: unknown[][]; row_step?: number; col_step?: number };
  if (!s || !Array.isArray(s.data) || shape.length > 2 || s.row_step !== 1 || s.col_step !== 1 || s.data.length * (s.data[0]?.length ?? 0) > MAX_LITERAL_CELLS) {
    return null;
  }
  const num = (v: unknown) => {
    const x = sampleNumber(v);
    return Number.isNaN(x) ? 'np.nan' : x === Infinity ? 'np.inf' : x === -Infinity ? '-np.inf' : String(x);
  };
  const rows = s.data.map(r => `[${r.map(num).join(', ')}]`);
  const body = shape.length === 2 ? `[${rows.join(', ')}]` : shape.length === 1 ? rows[0] : rows[0].slice(1, -1);
  return `np.array(${body}, dtype=np.${dtype || 'float64'})`;
}
