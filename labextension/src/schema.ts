/**
 * The shapes of the data between Python and the browser (docs/frontend-contract.md), TypeScript side.
 * The Python twin is widgets/kernelcore_widgets/schema.py. Every string in these shapes may come from
 * a file the user did not write: views render it as text (textContent / escaped DOT), never as HTML.
 */

export const PROGRAM_MIME = 'application/vnd.kernelcore.program+json';
export const TRACE_MIME = 'application/vnd.kernelcore.trace+json';
export const PROGRAM_SCHEMA = 'kernelcore.program';
export const TRACE_SCHEMA = 'kernelcore.trace';
export const FOREST_SCHEMA = 'kernelcore.scope_forest';

export type Role = 'forward' | 'backward' | 'optimize';
export type VarKind = 'data' | 'param' | 'grad' | 'tmp' | 'other';
export const ROLES: readonly Role[] = ['forward', 'backward', 'optimize'];
export const VAR_KINDS: readonly VarKind[] = ['data', 'param', 'grad', 'tmp', 'other'];

export interface VarJSON {
  id: string; // "v<block>:<name>", the declaring block
  name: string;
  type?: string;
  dtype?: string | null;
  shape?: number[] | null;
  persistable?: boolean;
  parameter?: boolean;
  kind?: VarKind | string;
  /** version 2: the innermost group holding it (null: block level) */
  group?: string | null;
}

export interface OpJSON {
  id: string; // "o<block>:<index>"
  idx: number;
  type: string;
  role?: Role | string;
  inputs?: Record<string, string[]>;
  outputs?: Record<string, string[]>;
  attrs?: Record<string, unknown>;
  sub_blocks?: number[];
  comment?: string;
  /** kernelcore has no definition (so no kernel) for this op type: the program can be shown, not run. */
  unsupported?: boolean;
  /** version 2: the innermost group holding it (null: block level) */
  group?: string | null;
  /** version 2, backward ops: the id of the forward op it differentiates */
  forward?: string;
  /** version 2: "file:line in fn: code", the user's frame of Paddle's op_callstack */
  callsite?: string;
}

export type GroupKind = 'stage' | 'layer' | 'repeat' | 'range';

/** version 2: a group of ops in a block (docs/frontend-contract.md), parents listed before kids. */
export interface GroupJSON {
  id: string; // group_<block>_<k>
  kind: GroupKind | string;
  label: string;
  parent: string | null;
  first: number;
  last: number;
  ops: number;
  count?: number; // repeat: how many alike siblings
  /** version 3, lazy programs: ops + vars directly in the group */
  nodes?: number;
  /** version 3, lazy programs: whether its direct ops and vars are in `ops`/`vars` (else fetched on opening) */
  loaded?: boolean;
  /** version 3, lazy programs: how many groups sit directly in it (known or not yet) */
  kids?: number;
}

/** [group of the writer side, group of the reader side, how many var-op edges] (innermost groups). */
export type GroupEdgeJSON = [string, string, number];
/** [var id, the op's innermost group (null: block level), "in": the op reads it | "out": writes it, count] */
export type ExternalEdgeJSON = [string, string | null, 'in' | 'out' | string, number];

export interface BlockJSON {
  idx: number;
  parent: number;
  vars: VarJSON[];
  ops: OpJSON[];
  groups?: GroupJSON[];
  /** version 3, lazy programs: merged edges between innermost groups */
  edges?: GroupEdgeJSON[];
  /** version 3, lazy programs: names the sent ops use whose variables were not sent -> their group (for a
   * variable of an enclosing block: the chain of that block's groups around it, outermost first) */
  refs?: Record<string, string | null | string[]>;
  /** version 3, lazy programs: edges from sent variables to ops not sent */
  external?: ExternalEdgeJSON[];
}

/** What a lazy program's group fetch answers (kernelcore.program_parts.ProgramParts.contents). */
export interface GroupContentsJSON {
  block: number;
  groups: Array<string | null>;
  ops: OpJSON[];
  vars: VarJSON[];
  refs: Record<string, string | null | string[]>;
  external: ExternalEdgeJSON[];
  /** replaces the block's edges */
  edges: GroupEdgeJSON[];
  /** the groups the view may draw now (the loaded ones and their kids), parents first */
  known: GroupJSON[];
  /** a pruned view: what pruning removed among these ops, vars and known groups */
  pruned?: PrunedJSON;
}

export interface SearchHitJSON {
  id: string;
  name: string;
  block: number;
  group: string | null;
  /** the groups around the hit, outermost first */
  path?: string[];
}

export interface LazyJSON {
  id: string | null; // the program id the kernel knows it by
  ops: number; // in the whole program
  vars: number;
}

export interface PrunedJSON {
  removed_ops: string[]; // ids of the original program
  removed_vars: string[];
  kept_map: Record<string, string>; // pruned program op id -> original op id
  // a program in parts: the groups made known so far that pruning touched, and the whole program's totals
  groups?: Record<string, 'all' | 'some'>;
  counts?: { ops: number; vars: number };
}

export interface ProgramJSON {
  schema: string;
  version: number;
  blocks: BlockJSON[];
  pruned?: PrunedJSON | null;
  dot?: string | null;
  /** version 3: null, or set when `blocks` holds only the skeleton (group contents come on demand) */
  lazy?: LazyJSON | null;
}

export type PreviewKind = 'heatmap' | 'sparkline' | 'scalar';
/** A sample cell: a number, or "NaN" / "Infinity" / "-Infinity" (JSON has no NaN), or null. */
export type SampleValue = number | string | boolean | null;

export interface ValuePreview {
  shape: number[];
  dtype: string;
  place: string;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  nan: number;
  inf: number;
  sample: SampleValue[][] | SampleValue[];
  kind: PreviewKind;
}

/** A variable of a ScopeForest node (kernelcore.scope_forest.VarInfo.to_json). */
export interface ForestVarJSON {
  name: string;
  kind: string; // tensor, empty, step_scopes, tensor_list, list, or a type name
  dtype?: string;
  shape?: number[];
  place?: string;
  scopes?: number[];
}

export interface ScopeOrigin {
  op?: string;
  block?: number;
  op_idx?: number;
  timestep?: number;
  what?: string;
  [key: string]: unknown;
}

export interface ScopeNodeJSON {
  id: number;
  parent: number | null;
  depth: number;
  origin: ScopeOrigin;
  kids: number[];
  vars: ForestVarJSON[];
}

export interface ScopeForestJSON {
  schema: string;
  version: number;
  roots: number[];
  scopes: ScopeNodeJSON[];
}

export type StepRole = 'x_t' | 'h_prev' | 'h_new' | 'output';
export interface StepVarJSON extends ForestVarJSON {
  preview?: ValuePreview | null;
  role?: StepRole | null;
  roles?: string[];
}

/** ScopeJSON: a ScopeForest node whose vars carry previews and roles (RNNStepper.step_scope). */
export interface ScopeJSON extends Omit<ScopeNodeJSON, 'vars'> {
  vars: StepVarJSON[];
}

export interface MemoryFlowJSON {
  t: number;
  from: string;
  to: string;
}

/** [slot, var name, shape or null, dtype or null] */
export type EventIO = [string, string, number[] | null, string | null];

export interface TraceEvent {
  seq: number;
  kind: string; // run_begin run_end scope_push scope_drop var_create vars_create op_run step_begin step_end error
  t_ns: number;
  scope?: number;
  block?: number;
  op?: number;
  op_type?: string;
  name?: string;
  dur_ns?: number;
  inputs?: EventIO[];
  outputs?: EventIO[];
  kernel?: string;
  place?: string;
  parent_scope?: number;
  timestep?: number;
  message?: string;
  names?: string[]; // vars_create: the variables a step scope created at once
}

export interface TraceJSON {
  schema: string;
  version: number;
  retain?: string;
  meta?: Record<string, unknown>;
  events: TraceEvent[];
  truncated?: number;
}

export interface TraceFilter {
  kind?: string;
  op_type?: string;
  scope?: number | null;
}

/** Messages, browser -> Python. */
export type OutgoingMessage =
  | { type: 'select'; id: string }
  | { type: 'select'; seq: number }
  | { type: 'open'; scope: number; name: string }
  | { type: 'goto'; t: number }
  | { type: 'next' }
  | { type: 'prev' }
  | { type: 'step' | 'finish' | 'step_timestep' | 'cont' | 'back' | 'back_timestep' | 'reverse_cont' };

export const DEBUGGER_ACTIONS = ['step', 'next', 'finish', 'step_timestep', 'cont', 'back', 'back_timestep', 'reverse_cont'] as const;

/** One level of a debug position (kernelcore.debug.Frame.to_json()): the op about to run in a block, or the
 * block's end (`end`: its last op has run; `op` is then the number of ops and `op_type` "end of block"). */
export interface DebugFrame {
  block: number;
  op: number;
  op_type: string;
  timestep: number | null;
  scope: number;
  end: boolean;
}

/** The op ids a position names, outermost first: `o<block>:<op>` for each frame that is not a block's end. */
export function frameOps(frames: DebugFrame[] | null | undefined): string[] {
  return (frames ?? []).filter(f => !f.end).map(f => `o${f.block}:${f.op}`);
}
export type DebuggerAction = (typeof DEBUGGER_ACTIONS)[number];

/** The view module names; each is labextension/src/views/<Name>.ts and static/<Name>.js. */
export const VIEW_NAMES = ['ProgramGraph', 'ScopeForest', 'RNNStepper', 'TraceTimeline', 'Debugger', 'TensorViewer'] as const;

export function isProgramJSON(x: unknown): x is ProgramJSON {
  return !!x && typeof x === 'object' && Array.isArray((x as ProgramJSON).blocks);
}

export function isTraceJSON(x: unknown): x is TraceJSON {
  return !!x && typeof x === 'object' && Array.isArray((x as TraceJSON).events);
}
