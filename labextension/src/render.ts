/**
 * Views over a local model, for outputs and files without a live widget: a ProgramJSON as the
 * ProgramGraph view, a trace as the TraceTimeline view. Used by the MIME renderers, the file viewer
 * and the sidebar.
 */
import { modelActions } from './debugactions';
import { h } from './dom';
import { LocalModel } from './model';
import type { ProgramGraphTraits, TraceTimelineTraits } from './widgets.generated';
import { CommPartsSource, PartsSource } from './parts';
import { isProgramJSON, isTraceJSON, ProgramJSON, TraceJSON } from './schema';
import { ProgramGraphView } from './views/ProgramGraph';
import { TraceTimelineView } from './views/TraceTimeline';

export interface Disposable {
  dispose(): void;
}

export function programModel(program: ProgramJSON): LocalModel<ProgramGraphTraits> {
  return new LocalModel<ProgramGraphTraits>({ program, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] });
}

export function traceModel(trace: TraceJSON): LocalModel<TraceTimelineTraits> {
  return new LocalModel<TraceTimelineTraits>({ events: trace.events, filter: {}, selected_event: -1 });
}

export function traceNote(trace: TraceJSON): string | undefined {
  const n = Number(trace.truncated);
  return n > 0 ? `truncated: the first ${trace.events.length} events are shown, ${n} more were left out` : undefined;
}

/**
 * Render a program into `host`; resolves when laid out. Its details panel gets the debug actions over the
 * plugin's debugger model (the active notebook kernel's live session) when the plugin has started.
 */
export async function showProgram(host: HTMLElement, data: unknown, source?: PartsSource | null): Promise<Disposable> {
  if (!isProgramJSON(data)) {
    host.appendChild(h('div', { cls: 'jp-Kernelcore-error', text: 'not a kernelcore program (expected schema "kernelcore.program")' }));
    return { dispose: () => undefined };
  }
  // a big program's cell result holds its outline; group contents come from the notebook's kernel
  const id = data.lazy && typeof data.lazy.id === 'string' ? data.lazy.id : null;
  const parts = source ?? (id ? new CommPartsSource(host, id) : null);
  const view = new ProgramGraphView(programModel(data), host, { local: true, parts, debug: modelActions(data) });
  await view.ready;
  return { dispose: () => { view.dispose(); (parts as { dispose?: () => void } | null)?.dispose?.(); } };
}

export function showTrace(host: HTMLElement, data: unknown): Disposable {
  if (!isTraceJSON(data)) {
    host.appendChild(h('div', { cls: 'jp-Kernelcore-error', text: 'not a kernelcore trace (expected schema "kernelcore.trace")' }));
    return { dispose: () => undefined };
  }
  return new TraceTimelineView(traceModel(data), host, { local: true, note: traceNote(data) });
}
