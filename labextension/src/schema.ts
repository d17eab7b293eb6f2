/**
 * The shapes of the data between Python and the browser (docs/frontend-contract.md), TypeScript side: the
 * types are generated from kernelcore/contract.schema.json (contract.generated.ts) and re-exported here with
 * the names the views use. Every string in these shapes may come from a file the user did not write: views
 * render it as text (textContent / escaped DOT), never as HTML.
 */
import type { GroupJSON, OpJSON, ProgramJSON, SearchResultJSON, StepVarJSON, TraceJSON, ValuePreview, VarJSON } from './contract.generated';
import type { Frame, Move } from './protocol.generated';
import type { TraceTimelineTraits } from './widgets.generated';

export const PROGRAM_MIME = 'application/vnd.kernelcore.program+json';
export const TRACE_MIME = 'application/vnd.kernelcore.trace+json';
export const PROGRAM_SCHEMA = 'kernelcore.program';
export const TRACE_SCHEMA = 'kernelcore.trace';
export const FOREST_SCHEMA = 'kernelcore.scope_forest';

export type { BlockJSON, EventIO, ExternalEdgeJSON, ForestVarJSON, GroupContentsJSON, GroupEdgeJSON, GroupJSON, LazyJSON,
  MemoryFlowJSON, OpJSON, ProgramJSON, PrunedJSON, SampleValue, ScopeForestJSON, ScopeJSON, ScopeNodeJSON, ScopeOrigin,
  SearchResultJSON, StepVarJSON, TraceEvent, TraceJSON, ValuePreview, VarJSON, VarRef } from './contract.generated';

export type Role = OpJSON['role'];
export type VarKind = VarJSON['kind'];
export type GroupKind = GroupJSON['kind'];
export type PreviewKind = ValuePreview['kind'];
export type StepRole = NonNullable<StepVarJSON['role']>;
/** One hit of a lazy program's search (SearchResultJSON). */
export type SearchHitJSON = SearchResultJSON['hits'][number];
export const ROLES: readonly Role[] = ['forward', 'backward', 'optimize'];
export const VAR_KINDS: readonly VarKind[] = ['data', 'param', 'grad', 'tmp', 'other'];

/** What a TraceTimeline shows of the events (its `filter` trait). */
export type TraceFilter = TraceTimelineTraits['filter'];

/** Messages, browser -> Python. */
export type OutgoingMessage =
  | { type: 'select'; id: string }
  | { type: 'select'; seq: number }
  | { type: 'open'; scope: number; name: string }
  | { type: 'goto'; t: number }
  | { type: 'next' }
  | { type: 'prev' }
  | { type: Move };

/** One level of a debug position (kernelcore.debug.Frame.to_json()): the op about to run in a block, or the
 * block's end (`end`: its last op has run; `op` is then the number of ops and `op_type` "end of block"). */
export type DebugFrame = Frame;

/** The op ids a position names, outermost first: `o<block>:<op>` for each frame that is not a block's end. */
export function frameOps(frames: DebugFrame[] | null | undefined): string[] {
  return (frames ?? []).filter(f => !f.end).map(f => `o${f.block}:${f.op}`);
}

/** The view module names; each is labextension/src/views/<Name>.ts and static/<Name>.js. */
export const VIEW_NAMES = ['ProgramGraph', 'ScopeForest', 'RNNStepper', 'TraceTimeline', 'Debugger', 'TensorViewer', 'HealthView'] as const;

export function isProgramJSON(x: unknown): x is ProgramJSON {
  return !!x && typeof x === 'object' && Array.isArray((x as ProgramJSON).blocks);
}

export function isTraceJSON(x: unknown): x is TraceJSON {
  return !!x && typeof x === 'object' && Array.isArray((x as TraceJSON).events);
}
