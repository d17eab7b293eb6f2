/**
 * Debugger: a paused run, composed of child widgets as lonboard composes layers. Its model refers to the
 * models of a ProgramGraph, a ScopeForest, an RNNStepper (null without a recurrent op) and a TraceTimeline
 * (traits `graph`, `forest`, `stepper`, `timeline`: "IPY_MODEL_<id>"), whose views it draws from them, each
 * answered by its own Python widget. Its own traits: position, frames, stop_reason, finished, time_travel
 * (the pause looked at in the past, -1 for the present) and breakpoints ([{id, kind, text, enabled}]); its
 * step controls send `{type: <move>}` for each move of the command table (MOVES, generated from
 * kernelcore_widgets/contract/commands.py). The ops named in `frames` are marked in the graph; selecting a
 * timeline event selects its op in the graph and reveals its scope in the forest. The graph's details carry
 * the debug actions (debugactions.ts), which the graph's Python widget runs on this Debugger's session.
 */
import { WidgetDebugActions } from '../debugactions';
import { button, clear, h } from '../dom';
import { childModel, Listeners, RenderProps, WidgetModel } from '../model';
import type { DebuggerTraits, ProgramGraphTraits, RNNStepperTraits, ScopeForestTraits, TraceTimelineTraits } from '../widgets.generated';
import { Move, MOVES } from '../protocol';
import { DebugFrame, frameOps, TraceEvent } from '../schema';
import { ProgramGraphView } from './ProgramGraph';
import { RNNStepperView } from './RNNStepper';
import { ScopeForestView } from './ScopeForest';
import { TraceTimelineView } from './TraceTimeline';
import { withKernelNotice } from '../restart';
import { commandTitle, PAUSE } from '../shortcuts';

/** The child widgets' models a Debugger is composed of (its `graph`, `forest`, `stepper`, `timeline` traits). */
export interface DebuggerChildren {
  graph: WidgetModel<ProgramGraphTraits>;
  forest: WidgetModel<ScopeForestTraits>;
  stepper: WidgetModel<RNNStepperTraits> | null;
  timeline: WidgetModel<TraceTimelineTraits>;
}

/** The children's models, from the widget manager. */
export async function debuggerChildren(model: WidgetModel<DebuggerTraits>): Promise<DebuggerChildren> {
  const [graph, forest, stepper, timeline] = await Promise.all([
    childModel<ProgramGraphTraits>(model, model.get('graph')),
    childModel<ScopeForestTraits>(model, model.get('forest')),
    childModel<RNNStepperTraits>(model, model.get('stepper')),
    childModel<TraceTimelineTraits>(model, model.get('timeline'))
  ]);
  if (!graph || !forest || !timeline) {
    throw new Error('a Debugger needs its graph, forest and timeline widgets');
  }
  return { graph, forest, stepper, timeline };
}

export class DebuggerView {
  readonly root: HTMLElement;
  readonly graph: ProgramGraphView;
  readonly forest: ScopeForestView;
  readonly stepper: RNNStepperView | null;
  readonly timeline: TraceTimelineView;
  readonly buttons = new Map<Move, HTMLButtonElement>();
  readonly pause: HTMLButtonElement;
  /** a move was sent and Python has not said `busy` about it yet (it says true, then false) */
  private _sent = false;
  private _listeners: Listeners<DebuggerTraits>;
  private _timelineListeners: Listeners<TraceTimelineTraits>;
  private _position: HTMLElement;
  private _reason: HTMLElement;
  private _rnnBox: HTMLElement;
  private _bpList: HTMLElement;

  constructor(
    readonly model: WidgetModel<DebuggerTraits>,
    el: HTMLElement,
    readonly children: DebuggerChildren
  ) {
    this._listeners = new Listeners(model);
    this.root = h('div', { cls: 'jp-Kernelcore-Debugger jp-Kernelcore-view' });
    const controls = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-debugControls' });
    for (const { name, label, help } of MOVES) {
      const b = button(label, () => this._move(name), { cls: `jp-Kernelcore-action-${name}`, title: help });
      this.buttons.set(name, b);
      controls.appendChild(b);
    }
    // titled as the sidebar's Pause, its key included: F6 in a notebook pauses the kernel's debug session
    this.pause = button(PAUSE.label, () => this.model.send({ type: 'pause' }), { cls: 'jp-Kernelcore-action-pause', title: commandTitle(PAUSE) });
    this._position = h('span', { cls: 'jp-Kernelcore-position' });
    this._reason = h('span', { cls: 'jp-Kernelcore-status' });
    controls.append(this.pause, this._position, this._reason);
    const graphBox = h('div', { cls: 'jp-Kernelcore-dbgGraph' });
    const side = h('div', { cls: 'jp-Kernelcore-dbgSide' });
    const forestBox = h('div', { cls: 'jp-Kernelcore-dbgForest' }, [h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Scopes' })]);
    this._rnnBox = h('div', { cls: 'jp-Kernelcore-dbgRNN' }, [h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Timesteps' })]);
    const timelineBox = h('div', { cls: 'jp-Kernelcore-dbgTimeline' }, [h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Events' })]);
    this._bpList = h('ul', { cls: 'jp-Kernelcore-dbgBreakpoints' });
    const bpBox = h('div', { cls: 'jp-Kernelcore-dbgBreakpointBox' }, [h('div', { cls: 'jp-Kernelcore-sectionTitle', text: 'Breakpoints' }), this._bpList]);
    side.append(bpBox, forestBox, this._rnnBox);
    this.root.append(controls, h('div', { cls: 'jp-Kernelcore-dbgMain' }, [graphBox, side]), timelineBox);
    el.appendChild(this.root);

    this.graph = new ProgramGraphView(children.graph, graphBox, { debug: new WidgetDebugActions(children.graph) });
    this.forest = new ScopeForestView(children.forest, forestBox);
    // the panel's "next" is the session's step to the next timestep, a move of the Debugger
    this.stepper = children.stepper
      ? new RNNStepperView(children.stepper, this._rnnBox, { onNext: () => this._move('step_timestep') })
      : null;
    this._rnnBox.style.display = this.stepper ? '' : 'none';
    this.timeline = new TraceTimelineView(children.timeline, timelineBox);
    this._timelineListeners = new Listeners(children.timeline);

    this._listeners.onChange(['position', 'frames', 'stop_reason', 'finished', 'time_travel'], () => this._update());
    this._listeners.onChange(['busy'], () => {
      this._sent = false;
      this._update();
    });
    this._timelineListeners.onChange(['selected_event'], () => this._followEvent());
    this._listeners.onChange(['breakpoints'], () => this._updateBreakpoints());
    this._update();
    this._updateBreakpoints();
  }
  private _updateBreakpoints(): void {
    const list = this.model.get('breakpoints');
    const items = (Array.isArray(list) ? list : []) as Array<{ id?: unknown; kind?: unknown; text?: unknown; enabled?: unknown }>;
    clear(this._bpList);
    if (!items.length) {
      this._bpList.appendChild(h('li', { cls: 'jp-Kernelcore-muted', text: 'none: click an op or a variable in the graph to add one' }));
      return;
    }
    for (const b of items) {
      const li = h('li', { cls: ['jp-Kernelcore-dbgBreakpoint', b.enabled === false ? 'jp-Kernelcore-muted' : ''], text: String(b.text ?? '') });
      li.dataset.kind = String(b.kind ?? '');
      this._bpList.appendChild(li);
    }
  }

  get ready(): Promise<void> {
    return this.graph.ready;
  }

  /** Send a move; until Python says it stopped, the view is busy (a second move would only queue). */
  private _move(name: Move): void {
    if (this.busy) {
      return;
    }
    this._sent = true;
    this._update();
    this.model.send({ type: name });
  }

  /** A move runs: "running\u2026", the moves disabled, Pause offered. */
  get busy(): boolean {
    return this._sent || !!this.model.get('busy');
  }

  private _update(): void {
    const busy = this.busy;
    const position = String(this.model.get('position') ?? '');
    const frames = (this.model.get('frames') ?? []) as DebugFrame[];
    const finished = !!this.model.get('finished');
    // time_travel >= 0: the cursor looks at a past pause (forward moves replay the record, then run on)
    const past = Number(this.model.get('time_travel') ?? -1) >= 0;
    const reason = String(this.model.get('stop_reason') ?? '');
    this._position.textContent = position + (past ? ' (past)' : '');
    this._reason.textContent = busy ? 'running\u2026' : reason === position ? '' : reason;
    const backwards = new Set(MOVES.filter(m => m.backwards).map(m => m.name));
    this.buttons.forEach((b, move) => (b.disabled = busy || (finished && !past && !backwards.has(move))));
    this.pause.disabled = !busy;
    this.root.classList.toggle('jp-Kernelcore-isBusy', busy);
    this.graph.setCurrent(frameOps(frames));
    this.root.classList.toggle('jp-Kernelcore-finished', finished && !past);
  }

  private _followEvent(): void {
    const seq = Number(this.children.timeline.get('selected_event') ?? -1);
    if (seq < 0) {
      return;
    }
    const e = this.timeline.events.find((x: TraceEvent) => x.seq === seq);
    if (!e) {
      return;
    }
    if (e.block !== undefined && e.op !== undefined && e.block !== null && e.op !== null) {
      const id = `o${e.block}:${e.op}`;
      if (String(this.children.graph.get('selected') ?? '') !== id) {
        this.graph.select(id);
      }
    }
    if (e.scope !== undefined && e.scope !== null) {
      this.forest.reveal(Number(e.scope));
    }
  }

  dispose(): void {
    this._listeners.dispose();
    this._timelineListeners.dispose();
    this.graph.dispose();
    this.forest.dispose();
    this.stepper?.dispose();
    this.timeline.dispose();
    this.root.remove();
  }
}

async function render({ model, el }: RenderProps<DebuggerTraits>): Promise<() => void> {
  const view = new DebuggerView(model, el, await debuggerChildren(model));
  await view.ready;
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };
