/**
 * Breakpoints from any program graph. The graph's details panel gets actions for the selected node: an op
 * "Break here" / "Run to here", a variable "Break on write" / "Watch...". Where they go depends on where the
 * graph is drawn:
 *  - a ProgramGraph widget in a notebook (anywidget: no Lab tokens): a `{type: "debug", action, ...}` message to
 *    its Python side, which acts on the kernel's live debug session and answers in the `debug` trait
 *    ({live, text, ok}); the session tells its listeners, so the sidebar's Breakpoints panel updates;
 *  - a program rendered as a cell output or opened as a file (the labextension): requests over the debugger
 *    model (IKernelcoreDebuggerModel, the `kernelcore.debugger` comm), which the plugin hands to the renderers
 *    through `setDebuggerModel`. The state the comm sends names the session's op types only, so these can
 *    tell a session of another program only when it lacks one of the shown program's op types.
 * With no live session (or one that clearly runs another program) the actions are disabled and the panel
 * says why.
 */
import { button, clear, h } from './dom';
import { WidgetModel } from './model';
import type { ProgramGraphTraits } from './widgets.generated';
import { Breakpoint, Command, CommandArgs, DebugAction, GRAPH_ACTIONS, Watch, WatchCond, WATCH_CONDS } from './protocol';
import { ProgramJSON } from './schema';
import { IKernelcoreDebuggerModel } from './tokens';

export type { DebugAction };

export interface DebugActions {
  /** A live session takes the actions now. */
  readonly live: boolean;
  /** The session's state, the last action's outcome, or why the actions are off. */
  readonly text: string;
  /** The session's state or why the actions are off, never an outcome (what a node not acted on shows). */
  readonly stateText: string;
  /** Which node the last action was about, and which node the actions were drawn for (renderActions keeps
   *  them here, not on the host element, which a details refresh may replace). */
  notes: { acted: string | null; shown: string | null };
  /** Whether the last action worked. */
  readonly ok: boolean;
  act(a: DebugAction): void;
  /** Call `cb` whenever live / text change; returns what disconnects it. */
  onChange(cb: () => void): () => void;
}

export { WATCH_CONDS };

/** The ProgramGraph widget's actions: messages to its Python side, answered in the `debug` trait. */
export class WidgetDebugActions implements DebugActions {
  notes = { acted: null as string | null, shown: null as string | null };
  constructor(private _model: WidgetModel<Pick<ProgramGraphTraits, 'debug'>>) {}

  private get _state(): { live?: boolean; text?: string; ok?: boolean } {
    const d = this._model.get('debug');
    return d && typeof d === 'object' ? d : {};
  }

  get live(): boolean {
    return !!this._state.live;
  }

  get text(): string {
    return String(this._state.text ?? '');
  }

  get ok(): boolean {
    return this._state.ok !== false;
  }

  /** Python's sentence while no action was taken here (an outcome replaces it in the trait) */
  private _idle: string | null = null;

  get stateText(): string {
    if (this._idle === null || !this.live) {
      return this.text; // no action yet, or the session is gone: the trait says why
    }
    return this._idle;
  }

  act(a: DebugAction): void {
    if (this._idle === null && this.live) {
      this._idle = this.text;
    }
    this._model.send({ type: 'debug', ...a });
  }

  onChange(cb: () => void): () => void {
    const fn = () => cb();
    this._model.on('change:debug', fn);
    return () => this._model.off('change:debug', fn);
  }
}

/** The labextension's actions: requests over the debugger model (the active notebook kernel's session). */
export class ModelDebugActions implements DebugActions {
  notes = { acted: null as string | null, shown: null as string | null };
  /** The last outcome; a "ran to" outcome names the position the session's state says (below). */
  private _last: { text: string; ok: boolean; ranTo?: boolean } | null = null;
  private _seen: number | null = null;
  private _cbs = new Set<() => void>();

  private _types: string[];

  /** `program`: the program the graph shows (its op types are checked against the session's). */
  constructor(
    private _dbg: IKernelcoreDebuggerModel,
    program: ProgramJSON | null = null
  ) {
    const types = new Set<string>();
    program?.blocks.forEach(b => b.ops.forEach(o => types.add(o.type)));
    this._types = [...types].sort();
  }

  private get _connected(): boolean {
    return this._dbg.status === 'connected' && !!this._dbg.session;
  }

  /** An op type of the shown program that the session's program lacks (null: none, or nothing to compare). */
  private get _missing(): string | null {
    const have = this._dbg.session?.op_types;
    return Array.isArray(have) ? (this._types.find(t => !have.includes(t)) ?? null) : null;
  }

  get live(): boolean {
    return this._connected && this._missing === null;
  }

  get text(): string {
    const s = this._dbg.session;
    const off = this._whyOff();
    if (off !== null || !s) {
      return off ?? '';
    }
    if (this._last && this._seen === s.id) {
      // the reply comes before the state it leads to: a "ran to" names the position of the latest state
      return this._last.ranTo ? `ran to ${s.position_text}` : this._last.text;
    }
    return this.stateText;
  }

  get stateText(): string {
    const s = this._dbg.session;
    const off = this._whyOff();
    if (off !== null || !s) {
      return off ?? '';
    }
    return `live debug session: ${s.finished && s.at_present ? 'the run has ended' : `paused at ${s.position_text}`}`;
  }

  /** Why the actions are off (null: they are on). */
  private _whyOff(): string | null {
    if (!this._connected || !this._dbg.session) {
      return `no live debug session: ${this._dbg.statusText || 'not connected to the kernel'}`;
    }
    const missing = this._missing;
    return missing === null ? null : `the live debug session runs another program than this graph shows (it has no '${missing}' op)`;
  }

  get ok(): boolean {
    return this._last?.ok ?? true;
  }

  act(a: DebugAction): void {
    const { action, ...sent } = a;
    const spec = GRAPH_ACTIONS[action];
    void this._dbg.request<Command>(spec.command, { ...sent, ...spec.fixed } as CommandArgs[Command]).then(r => {
      this._seen = this._dbg.session?.id ?? null;
      if (!r.ok) {
        this._last = { text: `not done: ${r.error ?? 'failed'}`, ok: false };
      } else if (a.action === 'run_to') {
        this._last = { text: 'ran to', ok: true, ranTo: true };
      } else {
        const x = r.result as Breakpoint | Watch | null;
        this._last = { text: `added ${a.action === 'watch' ? 'watch' : 'breakpoint'} ${x?.text ?? ''}`.trim(), ok: true };
      }
      this._cbs.forEach(cb => cb());
    });
  }

  onChange(cb: () => void): () => void {
    const slot = () => cb();
    this._dbg.changed.connect(slot);
    this._cbs.add(cb);
    return () => {
      this._dbg.changed.disconnect(slot);
      this._cbs.delete(cb);
    };
  }
}

// -- the model the labextension's plugin provides, for renderers that cannot ask for tokens ------------------
let _model: IKernelcoreDebuggerModel | null = null;

/** Called by the debugger plugin with the IKernelcoreDebuggerModel it received. */
export function setDebuggerModel(model: IKernelcoreDebuggerModel | null): void {
  _model = model;
}

/** Actions over the plugin's debugger model for a graph of `program` (null before the plugin started, e.g. in tests). */
export function modelActions(program: ProgramJSON | null = null): DebugActions | null {
  return _model ? new ModelDebugActions(_model, program) : null;
}

export type ActionTarget = { kind: 'op'; block: number; op: number; label: string } | { kind: 'var'; name: string };

/**
 * The action bar for `target` into `host` (emptied first): buttons disabled without a live session, a note
 * saying the session's state or the last outcome, and for a variable a small watch form ("Watch...").
 */
export function renderActions(host: HTMLElement, dbg: DebugActions, target: ActionTarget | null): void {
  clear(host);
  if (!target) {
    host.classList.add('jp-Kernelcore-hidden'); // nothing (yet) to act on: a redraw keeps the last outcome
    return;
  }
  const key = targetKey(target);
  if (dbg.notes.shown !== key) {
    dbg.notes.acted = null; // another node: the last outcome was about the one before
  }
  dbg.notes.shown = key;
  host.classList.remove('jp-Kernelcore-hidden');
  const d = { ...actedOn(dbg, key), live: dbg.live };
  const off = !d.live;
  const buttons: HTMLButtonElement[] = [];
  const add = (b: HTMLButtonElement) => {
    b.disabled = off;
    buttons.push(b);
    return b;
  };
  const row = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-debugActionBar' });
  if (target.kind === 'op') {
    const { block, op } = target;
    row.append(
      h('span', { cls: 'jp-Kernelcore-muted', text: `${target.label}: ` }),
      add(button('Break here', () => d.act({ action: 'break_op', block, op }), { cls: 'jp-Kernelcore-breakHere', title: 'stop before this op (each time it runs)' })),
      add(button('Run to here', () => d.act({ action: 'run_to', block, op }), { cls: 'jp-Kernelcore-runToHere', title: 'run the live session until it reaches this op' }))
    );
    host.appendChild(row);
  } else {
    const name = target.name;
    const form = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-watchForm jp-Kernelcore-hidden' });
    const cond = h('select', { cls: 'jp-Kernelcore-watchFormCond', attrs: { 'aria-label': 'watch condition' } });
    WATCH_CONDS.forEach(c => cond.appendChild(h('option', { text: c, attrs: { value: c } })));
    const lo = h('input', { cls: 'jp-Kernelcore-watchFormLo', attrs: { type: 'text', placeholder: 'lo', size: '5', 'aria-label': 'lo' } });
    const hi = h('input', { cls: 'jp-Kernelcore-watchFormHi', attrs: { type: 'text', placeholder: 'hi / bound', size: '7', 'aria-label': 'hi' } });
    const num = (i: HTMLInputElement) => {
      const v = i.value.trim();
      const n = Number(v);
      return v === '' || !Number.isFinite(n) ? null : n;
    };
    form.append(
      cond,
      lo,
      hi,
      add(button('Add watch', () => d.act({ action: 'watch', var: name, cond: cond.value as WatchCond, lo: num(lo), hi: num(hi) }), { cls: 'jp-Kernelcore-watchAdd', title: 'pause when a write of this variable meets the condition' }))
    );
    row.append(
      h('span', { cls: 'jp-Kernelcore-muted', text: `${name}: ` }),
      add(button('Break on write', () => d.act({ action: 'break_write', var: name }), { cls: 'jp-Kernelcore-breakOnWrite', title: 'pause right after any op writes this variable' })),
      add(button('Watch\u2026', () => form.classList.toggle('jp-Kernelcore-hidden'), { cls: 'jp-Kernelcore-watchVar', title: 'pause when a write meets a condition (NaN, zero, a range...)' }))
    );
    host.append(row, form);
  }
  const outcome = dbg.notes.acted === key;
  const note = h('div', {
    cls: ['jp-Kernelcore-debugNote', d.live ? '' : 'jp-Kernelcore-muted', !outcome || dbg.ok ? '' : 'jp-Kernelcore-error'],
    text: outcome ? dbg.text : dbg.stateText
  });
  note.dataset.live = String(d.live);
  host.appendChild(note);
}

/** A target as a key: an outcome note stays only while the node it was about stays shown. */
function targetKey(t: ActionTarget): string {
  return t.kind === 'op' ? `o${t.block}:${t.op}` : `v:${t.name}`;
}

/** `dbg`'s act, remembering which node the action was about. */
function actedOn(dbg: DebugActions, key: string): Pick<DebugActions, 'act'> {
  return {
    act: (a: DebugAction) => {
      dbg.notes.acted = key;
      dbg.act(a);
    }
  };
}

/** What the actions act on for program id `id` (an op or a var node), from the graph's own names. */
export function targetOf(id: string, nameOf: (id: string) => string | null): ActionTarget | null {
  const op = /^o(\d+):(\d+)$/.exec(id);
  if (op) {
    return { kind: 'op', block: Number(op[1]), op: Number(op[2]), label: `${nameOf(id) ?? 'op'} #${op[2]} of block ${op[1]}` };
  }
  const v = /^v(\d+):(.+)$/.exec(id);
  if (v) {
    return { kind: 'var', name: nameOf(id) ?? v[2] };
  }
  return null;
}
