/**
 * The "Kernelcore debugger" sidebar, bound to the active notebook kernel's live debug session through the
 * debugger model (tokens.ts; the `kernelcore.debugger` comm). No widget needs to be displayed.
 *
 * Sections: controls (step, next, finish, step t, continue, back, back t, reverse, run N, run to here),
 * Callstack (frames innermost first; a click shows that frame's scope in Variables), Variables (the scope
 * forest at the cursor, values previewed; a click on a variable asks where its value came from, its "View"
 * opens the tensor viewer in the main area through `onViewTensor`: tensorpanel.ts),
 * Provenance (the chain of writers, each a button that moves the cursor right after that op), Breakpoints
 * and watches (enable/disable/remove; add by op type, by a write, NaN, or a watch condition), Hits, and
 * the program of the notebook's last kernelcore output (click an op: break there or run to it).
 */
import { Widget } from '@lumino/widgets';
import { copyButton, offerCopyMenu } from './copytext';
import { button, clear, formatNumber, formatShape, h } from './dom';
import { CommPartsSource, KernelLike } from './parts';
import { programModel } from './render';
import { isProgramJSON, PROGRAM_MIME, TRACE_MIME } from './schema';
import { Command, CommandArgs, ControlSpec, Move, MOVES, Origin, OriginNode, Session, ValuePreview, WatchCond, WATCH_CONDS } from './protocol';
import { IKernelcoreDebuggerModel } from './tokens';
import { commandTitle, PAUSE } from './shortcuts';
import { ProgramGraphView } from './views/ProgramGraph';

export interface FoundOutput {
  mime: string;
  data: unknown;
  cell: number; // index of the cell
}

/** A notebook model as far as we read it: cells with outputs holding MIME bundles. */
export interface NotebookLike {
  cells: { length: number; get(i: number): any };
}

/** The last kernelcore output of a notebook, searching cells from the bottom. */
export function findLastKernelcoreOutput(nb: NotebookLike | null | undefined): FoundOutput | null {
  if (!nb?.cells) {
    return null;
  }
  for (let i = nb.cells.length - 1; i >= 0; i--) {
    const outputs = nb.cells.get(i)?.outputs;
    if (!outputs || typeof outputs.length !== 'number') {
      continue;
    }
    for (let j = outputs.length - 1; j >= 0; j--) {
      const o = outputs.get(j);
      const data = o?.data ?? {};
      for (const mime of [PROGRAM_MIME, TRACE_MIME]) {
        if (data[mime] !== undefined) {
          return { mime, data: data[mime], cell: i };
        }
      }
    }
  }
  return null;
}

export { commandTitle, formatShortcut, isMac, PAUSE } from './shortcuts';

/** Whether a control can be used now: one that stops a move only while a move runs, another while a session is open. */
export function controlEnabled(spec: ControlSpec, model: { busy: boolean; session: unknown }): boolean {
  return spec.whileBusy ? model.busy : !!model.session;
}

function num(input: HTMLInputElement): number | null {
  const v = input.value.trim();
  if (v === '') {
    return null;
  }
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * A variable's value as tokens ("float32[2, 4]", "min -0.5", ...): the list wraps between tokens, never
 * inside one. Without a preview (past the kernel's budget) the dtype and shape the forest knows.
 */
export function valueTokens(v: { kind: string; dtype?: string | null; shape?: number[] | null; preview?: ValuePreview | null }): string[] {
  const p = v.preview;
  if (!p) {
    return v.kind === 'tensor' && v.dtype ? [`${v.dtype}${formatShape(v.shape ?? [])}`] : [v.kind];
  }
  const tokens = [`${p.dtype}${formatShape(p.shape)}`];
  if (p.min !== undefined && p.min !== null) {
    tokens.push(`min ${formatNumber(p.min)}`, `max ${formatNumber(p.max)}`, `mean ${formatNumber(p.mean)}`);
  }
  if (p.nan) {
    tokens.push(`${p.nan} NaN`);
  }
  if (p.inf) {
    tokens.push(`${p.inf} Inf`);
  }
  return tokens;
}

/** The value's tokens as spans that do not break inside (a token longer than the line ends in an ellipsis). */
function valueElement(tokens: string[]): HTMLElement {
  const text = tokens.join('  ');
  const parts = tokens.flatMap((t, i) => [...(i ? [' '] : []), h('span', { cls: 'jp-Kernelcore-valueToken', text: t })]);
  return h('span', { cls: 'jp-Kernelcore-varValue', title: text }, parts);
}

export class KernelcoreSidebar extends Widget {
  private _status: HTMLElement;
  /** "running\u2026" while a move runs, beside Pause */
  private _busy: HTMLElement;
  readonly pause: HTMLButtonElement;
  private _runN: HTMLButtonElement;
  private _where: HTMLElement;
  private _reason: HTMLElement;
  private _reply: HTMLElement;
  private _stack: HTMLElement;
  private _vars: HTMLElement;
  /** what the Variables list is narrowed to (part of a name, any case); kept across re-renders */
  private _varFilter: HTMLInputElement;
  private _prov: HTMLElement;
  /** The session the panels show, and a count of its changes (provenance replies from an older one are dropped). */
  private _sessionId: number | null = null;
  private _sessionEpoch = 0;
  private _bps: HTMLElement;
  private _hits: HTMLElement;
  private _graphHost: HTMLElement;
  private _graphNote: HTMLElement;
  private _graph: ProgramGraphView | null = null;
  private _graphParts: CommPartsSource | null = null;
  private _graphData: unknown = undefined;
  private _opTypes: HTMLSelectElement;
  private _shownScope: number | null = null;
  readonly buttons = new Map<Move, HTMLButtonElement>();
  /** Opens the tensor viewer for a variable (the plugin puts it in the main area); none: no "View" action. */
  onViewTensor: ((name: string, scope: number) => void) | null = null;

  constructor(
    readonly model: IKernelcoreDebuggerModel,
    private _find: () => { name: string; nb: NotebookLike | null; kernel?: KernelLike | null } | null = () => null
  ) {
    super();
    this.id = 'jp-kernelcore-debugger';
    this.addClass('jp-Kernelcore-sidebar');
    this.title.caption = 'Kernelcore debugger';
    const n = this.node;
    // focusable, so a click on its text (title, callstack) keeps the focus inside the sidebar, where the
    // moves' key bindings (selector .jp-Kernelcore-sidebar) still match; else the focus falls to <body>
    n.tabIndex = -1;
    n.appendChild(h('div', { cls: 'jp-Kernelcore-sidebarTitle', text: 'Kernelcore debugger' }));
    this._status = h('div', { cls: 'jp-Kernelcore-dbgStatus' });
    const controls = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-dbgControls' });
    for (const { name: cmd, label, help, commandId, keys } of MOVES) {
      const title = commandTitle({ commandId, help, keys });
      const b = button(label, () => void this.run(cmd), { cls: `jp-Kernelcore-cmd-${cmd}`, title });
      this.buttons.set(cmd, b);
      controls.appendChild(b);
    }
    this.pause = button(PAUSE.label, () => void this.run(PAUSE.name), { cls: 'jp-Kernelcore-cmd-pause', title: commandTitle(PAUSE) });
    this._busy = h('span', { cls: 'jp-Kernelcore-busy', text: 'running\u2026' });
    controls.append(this.pause, this._busy);
    const runN = h('input', { cls: 'jp-Kernelcore-runN', attrs: { type: 'number', min: '1', value: '5', 'aria-label': 'steps' } });
    this._runN = button('Run N', () => void this.run('run_n', { n: Math.max(1, num(runN) ?? 1) }), {
      cls: 'jp-Kernelcore-cmd-run_n',
      title: 'kernelcore:run-n: that many steps'
    });
    controls.append(this._runN, runN);
    this._where = h('div', { cls: 'jp-Kernelcore-dbgPosition' });
    this._reason = h('div', { cls: 'jp-Kernelcore-dbgReason' });
    this._reply = h('div', { cls: 'jp-Kernelcore-reply' });
    this._stack = h('div', { cls: 'jp-Kernelcore-callstack' });
    this._vars = h('div', { cls: 'jp-Kernelcore-variables' });
    this._varFilter = h('input', {
      cls: 'jp-Kernelcore-varFilter',
      attrs: { type: 'search', placeholder: 'filter variables', 'aria-label': 'filter variables' }
    });
    this._varFilter.addEventListener('input', () => this._applyVarFilter());
    this._prov = h('div', { cls: 'jp-Kernelcore-provenance' });
    this._bps = h('div', { cls: 'jp-Kernelcore-breakpoints' });
    this._hits = h('div', { cls: 'jp-Kernelcore-hits' });
    this._graphNote = h('div', { cls: 'jp-Kernelcore-muted' });
    this._graphHost = h('div', { cls: 'jp-Kernelcore-sidebarView' });

    // adding breakpoints and watches
    this._opTypes = h('select', { cls: 'jp-Kernelcore-bpOpType', attrs: { 'aria-label': 'op type' } });
    const writeVar = h('input', { cls: 'jp-Kernelcore-bpVar', attrs: { type: 'text', placeholder: 'variable', 'aria-label': 'variable' } });
    const cond = h('select', { cls: 'jp-Kernelcore-watchCond', attrs: { 'aria-label': 'watch condition' } });
    for (const c of WATCH_CONDS) {
      cond.appendChild(h('option', { text: c, attrs: { value: c } }));
    }
    const lo = h('input', { cls: 'jp-Kernelcore-watchLo', attrs: { type: 'text', placeholder: 'lo', size: '5', 'aria-label': 'lo' } });
    const hi = h('input', { cls: 'jp-Kernelcore-watchHi', attrs: { type: 'text', placeholder: 'hi / bound', size: '7', 'aria-label': 'hi' } });
    const adders = h('div', { cls: 'jp-Kernelcore-bpAdd' }, [
      h('div', {}, [
        this._opTypes,
        button('Break on op type', () => void this.run('break_add', { kind: 'op_type', op_type: this._opTypes.value }), { cls: 'jp-Kernelcore-addOpType' }),
        button('Break on NaN', () => void this.run('break_add', { kind: 'nan' }), { cls: 'jp-Kernelcore-addNan' })
      ]),
      h('div', {}, [
        writeVar,
        button('Break on write', () => void this.run('break_add', { kind: 'write', var: writeVar.value.trim() }), { cls: 'jp-Kernelcore-addWrite' })
      ]),
      h('div', {}, [
        cond,
        lo,
        hi,
        button(
          'Watch',
          () => {
            const v = writeVar.value.trim();
            const onOp = v === '' ? this._opTypes.value : null;
            void this.run('watch_add', { var: v || null, op_type: onOp, cond: cond.value as WatchCond, lo: num(lo), hi: num(hi) });
          },
          { cls: 'jp-Kernelcore-addWatch', title: 'watch the variable above (or, if empty, every output of the selected op type)' }
        )
      ])
    ]);

    const section = (title: string, body: HTMLElement, extra: HTMLElement[] = []) =>
      h('div', { cls: 'jp-Kernelcore-dbgSection' }, [h('div', { cls: 'jp-Kernelcore-sectionTitle', text: title }), ...extra, body]);
    n.append(
      this._status,
      controls,
      this._where,
      this._reason,
      this._reply,
      section('Callstack', this._stack),
      section('Variables', this._vars, [this._varFilter]),
      section('Provenance', this._prov),
      section('Breakpoints', this._bps, [adders]),
      section('Hits', this._hits),
      section('Program', this._graphHost, [this._graphNote])
    );
    this.model.changed.connect(this._render, this);
    this._render();
  }

  /** Send a request and show its error, if any. */
  async run<C extends Command>(command: C, args: CommandArgs[C] = {} as CommandArgs[C]): Promise<void> {
    this._reply.textContent = '';
    const askedIn = this._sessionEpoch;
    const r = await this.model.request(command, args);
    if (!r.ok) {
      this._reply.textContent = r.error ?? 'failed';
      this._reply.classList.add('jp-Kernelcore-error');
      return;
    }
    this._reply.classList.remove('jp-Kernelcore-error');
    if (command === 'provenance' && r.result && askedIn === this._sessionEpoch) {
      this._showProvenance(r.result as Origin);
    }
  }

  private _render(): void {
    const s = this.model.session;
    this._followSession(s);
    this._status.textContent = this.model.statusText;
    this.node.dataset.status = this.model.status;
    this.buttons.forEach(b => (b.disabled = !s));
    const busy = this.model.busy;
    this.node.classList.toggle('jp-Kernelcore-isBusy', busy);
    this.pause.disabled = !controlEnabled(PAUSE, this.model);
    this._runN.disabled = busy || !s;
    if (!s) {
      this._where.textContent = '';
      this._reason.textContent = '';
      [this._stack, this._vars, this._bps, this._hits].forEach(clear);
      return;
    }
    const backwards = new Set<Move>(MOVES.filter(m => m.backwards).map(m => m.name));
    this.buttons.forEach((b, cmd) => (b.disabled = busy || (s.finished && s.at_present && !backwards.has(cmd))));
    this._where.textContent = s.position_text + (s.at_present ? '' : `  (past: pause ${s.pause} of ${s.pauses - 1})`);
    this._reason.textContent = s.stop_reason;
    this.node.classList.toggle('jp-Kernelcore-past', !s.at_present);
    this._renderStack(s);
    this._renderVars(s);
    this._renderBreakpoints(s);
    this._renderHits(s);
    this._markGraph(s);
  }

  private _renderStack(s: Session): void {
    clear(this._stack);
    if (!s.callstack.length) {
      this._stack.appendChild(h('div', { cls: 'jp-Kernelcore-muted', text: 'the run has ended' }));
    }
    for (const f of s.callstack) {
      const row = h('div', { cls: 'jp-Kernelcore-frame', text: f.label, title: `scope ${f.scope}` });
      row.dataset.block = String(f.block);
      row.dataset.op = String(f.op);
      row.classList.toggle('jp-Kernelcore-selected', this._shownScope === f.scope);
      row.addEventListener('click', () => {
        this._shownScope = f.scope;
        this._render();
      });
      this._stack.appendChild(row);
    }
  }

  private _renderVars(s: Session): void {
    clear(this._vars);
    const inner = s.position.length ? s.position[s.position.length - 1].scope : null;
    const focus = this._shownScope !== null && s.variables.some(v => v.scope === this._shownScope) ? this._shownScope : inner;
    for (const sc of s.variables) {
      const box = h('details', { cls: 'jp-Kernelcore-scopeVars' });
      box.dataset.scope = String(sc.scope);
      if (sc.scope === focus || (sc.visible && focus === inner)) {
        box.open = true;
      }
      box.appendChild(h('summary', { text: sc.label + (sc.visible ? '' : ' (not visible from here)') }));
      for (const v of sc.vars) {
        const tokens = valueTokens(v);
        const row = h('div', { cls: 'jp-Kernelcore-var', title: 'click: where did this value come from? (right click: copy)' }, [
          h('span', { cls: 'jp-Kernelcore-varName', text: v.name }),
          copyButton('name', () => v.name),
          valueElement(tokens)
        ]);
        offerCopyMenu(row, v.name, () => tokens.join('  '));
        row.dataset.name = v.name;
        row.addEventListener('click', () => void this.run('provenance', { name: v.name, depth: 6 }));
        const open = this.onViewTensor;
        if (open && v.kind === 'tensor') {
          const view = button('View', () => open(v.name, sc.scope), { cls: 'jp-Kernelcore-varView', title: 'open the tensor viewer: the value at the cursor, following it' });
          view.addEventListener('click', ev => ev.stopPropagation()); // not also a provenance click
          row.classList.add('jp-Kernelcore-hasView');
          row.insertBefore(view, row.firstChild); // floats right, on the name's line
        }
        box.appendChild(row);
      }
      this._vars.appendChild(box);
    }
    this._applyVarFilter();
  }

  /**
   * Shows only the variables whose name holds the filter's text (any case), and only the scopes with one
   * of them; a scope with a match opens. An empty filter shows every variable and leaves the scopes as
   * they were drawn.
   */
  private _applyVarFilter(): void {
    const want = this._varFilter.value.trim().toLowerCase();
    this._vars.querySelectorAll<HTMLDetailsElement>('details.jp-Kernelcore-scopeVars').forEach(box => {
      let shown = 0;
      box.querySelectorAll<HTMLElement>('.jp-Kernelcore-var').forEach(row => {
        const hit = !want || (row.dataset.name ?? '').toLowerCase().includes(want);
        row.classList.toggle('jp-Kernelcore-hidden', !hit);
        shown += hit ? 1 : 0;
      });
      box.classList.toggle('jp-Kernelcore-hidden', !!want && shown === 0);
      if (want && shown > 0) {
        box.open = true;
      }
    });
  }

  /**
   * A provenance chain names events of one run: once the session goes (kernel restart, another notebook) or
   * another takes its place, its event numbers mean nothing there, so the chain and its graph trail go too.
   * A session that vanishes and comes back under the same id (a restarted kernel reusing an address) still
   * counts as new: every change, through "none" included, opens a new epoch.
   */
  private _followSession(s: Session | null): void {
    const id = s ? s.id : null;
    if (id === this._sessionId) {
      return;
    }
    this._sessionId = id;
    this._sessionEpoch++;
    clear(this._prov);
    this._graph?.setTrail([]);
  }

  private _showProvenance(o: Origin): void {
    clear(this._prov);
    for (const row of provenanceRows(o)) {
      this._prov.appendChild(this._originRow(row));
    }
    if (o.truncated) {
      const why = o.limits ? ` (depth ${o.limits.depth}, at most ${o.limits.nodes} writes)` : '';
      this._prov.appendChild(h('div', { cls: ['jp-Kernelcore-muted', 'jp-Kernelcore-originCut'], text: `cut short${why}: the rows marked \u2026 have inputs not followed` }));
    }
    // the same trail in the graph: every op the value came from
    const trail = o.nodes.filter(x => (x.kind === 'op' || x.kind === 'bound') && x.block !== null && x.op !== null).map(x => `o${x.block}:${x.op}`);
    this._graph?.setTrail(trail);
  }

  private _originRow({ node: x, depth, seen }: ProvenanceRow): HTMLElement {
    const el = h('div', { cls: ['jp-Kernelcore-origin', `jp-Kernelcore-origin-${x.kind}`] });
    el.style.paddingLeft = `${Math.min(depth, 24) * 10}px`;
    el.dataset.id = String(x.id);
    el.dataset.timestep = x.timestep === null ? '' : String(x.timestep);
    if (seen) {
      // a shared input: shown in full once, referred to here
      el.classList.add('jp-Kernelcore-originRef');
      el.appendChild(h('span', { text: `${x.name} \u2192 see #${x.id}` }));
      return el;
    }
    const label = `#${x.id} ${originLabel(x)}${x.cut ? ' \u2026' : ''}`;
    if (x.event !== null) {
      el.appendChild(button(label, () => void this.run('goto_event', { event: x.event as number }), { cls: 'jp-Kernelcore-originLink', title: 'show the state right after this op' }));
    } else {
      el.appendChild(h('span', { text: label }));
    }
    if (x.cut) {
      el.title = x.cut === 'depth' ? 'its inputs lie deeper than the depth asked' : 'the node budget ran out before its inputs';
    }
    return el;
  }

  private _renderBreakpoints(s: Session): void {
    clear(this._bps);
    const keep = this._opTypes.value;
    clear(this._opTypes);
    for (const t of s.op_types) {
      this._opTypes.appendChild(h('option', { text: t, attrs: { value: t } }));
    }
    if (s.op_types.includes(keep)) {
      this._opTypes.value = keep;
    }
    const items = [...s.breakpoints.map(b => ({ id: b.id, text: b.text, enabled: b.enabled })), ...s.watches.map(w => ({ id: w.id, text: `${w.text} (${w.hits} hits)`, enabled: w.enabled }))];
    for (const b of items) {
      const box = h('input', { attrs: { type: 'checkbox', 'aria-label': 'enabled' } });
      box.checked = b.enabled;
      box.addEventListener('change', () => void this.run('break_enable', { id: b.id, enabled: box.checked }));
      const row = h('div', { cls: 'jp-Kernelcore-bp' }, [
        box,
        h('span', { text: b.text }),
        button('\u00d7', () => void this.run('break_remove', { id: b.id }), { cls: 'jp-Kernelcore-bpRemove', title: 'remove' })
      ]);
      row.dataset.id = String(b.id);
      this._bps.appendChild(row);
    }
  }

  private _renderHits(s: Session): void {
    clear(this._hits);
    for (const hit of s.hits) {
      this._hits.appendChild(button(hit.message, () => void this.run('goto_event', { event: hit.event }), { cls: 'jp-Kernelcore-hit', title: 'show the state right after this write' }));
    }
  }

  // -- the program of the notebook's last kernelcore output: click an op to break or run to it ------------
  refresh(force = false): void {
    const cur = this._find();
    const found = cur ? findLastKernelcoreOutput(cur.nb) : null;
    const data = found && found.mime === PROGRAM_MIME ? found.data : undefined;
    if (!force && data === this._graphData) {
      return;
    }
    this._graphData = data;
    this._graph?.dispose();
    this._graph = null;
    clear(this._graphHost);
    if (!data || !isProgramJSON(data)) {
      this._graphNote.textContent = 'display the program (`program` as a cell\'s last expression) to break on an op by clicking it';
      return;
    }
    this._graphNote.textContent = `${cur?.name ?? ''}, cell ${(found?.cell ?? 0) + 1}: click an op to break there or run to it`;
    const m = programModel(data);
    const actions = h('div', { cls: 'jp-Kernelcore-opActions' });
    this._graphHost.appendChild(actions);
    m.on('change:selected', () => {
      clear(actions);
      const id = String(m.get('selected') ?? '');
      const op = /^o(\d+):(\d+)$/.exec(id); // an op id of the program contract, not a position
      if (!op) {
        return;
      }
      const block = Number(op[1]);
      const idx = Number(op[2]);
      actions.append(
        h('span', { text: `op ${id}: ` }),
        button('Break here', () => void this.run('break_add', { kind: 'op', block, op: idx }), { cls: 'jp-Kernelcore-breakHere' }),
        button('Run to here', () => void this.run('run_to', { block, op: idx }), { cls: 'jp-Kernelcore-runToHere' })
      );
    });
    // a big program's output holds its outline: the groups come from the notebook's kernel, as in the output
    const pid = data.lazy && typeof data.lazy.id === 'string' ? data.lazy.id : null;
    this._graphParts?.dispose();
    this._graphParts = pid ? new CommPartsSource(() => this._find()?.kernel ?? null, pid) : null;
    this._graph = new ProgramGraphView(m, this._graphHost, { local: true, parts: this._graphParts });
    if (this.model.session) {
      this._markGraph(this.model.session);
    }
  }

  private _markGraph(s: Session): void {
    this._graph?.setCurrent(s.position.filter(f => !f.end).map(f => `o${f.block}:${f.op}`));
  }

  protected onAfterShow(): void {
    this.refresh();
    this.model.reconnect();
  }

  dispose(): void {
    this.model.changed.disconnect(this._render, this);
    this._graph?.dispose();
    this._graphParts?.dispose();
    super.dispose();
  }
}

export interface ProvenanceRow {
  node: OriginNode;
  depth: number;
  /** shown in full on an earlier row: this row only refers to it */
  seen: boolean;
}

/** The rows of a provenance DAG as an indented tree, depth first from the root: each node in full once,
 *  later readers of it as references. Walked with a stack: a long chain does not grow the call stack. */
export function provenanceRows(o: Origin): ProvenanceRow[] {
  const byId = new Map(o.nodes.map(x => [x.id, x] as [number, OriginNode]));
  const rows: ProvenanceRow[] = [];
  const shown = new Set<number>();
  const todo: Array<[number, number]> = [[o.root, 0]];
  while (todo.length) {
    const [id, depth] = todo.pop()!;
    const node = byId.get(id);
    if (!node) {
      continue;
    }
    const seen = shown.has(id);
    rows.push({ node, depth, seen });
    if (seen) {
      continue;
    }
    shown.add(id);
    for (let i = node.inputs.length - 1; i >= 0; i--) {
      todo.push([node.inputs[i], depth + 1]);
    }
  }
  return rows;
}

export function originLabel(x: OriginNode): string {
  const t = x.timestep !== null ? ` t=${x.timestep}` : '';
  const where = x.kind === 'op' || x.kind === 'bound' ? ` \u2190 ${x.kind === 'bound' ? 'bound by ' : ''}${x.op_type} (block ${x.block} op #${x.op}${t})` : ` \u2190 ${x.kind}`;
  return `${x.name}${where}${x.note ? ': ' + x.note : ''}`;
}
