/**
 * The `kernelcore.debugger` comm messages: the TypeScript twin of
 * widgets/kernelcore_widgets/debug_protocol.schema.json (tests/test_debug_comm.py checks that every
 * definition there has a type of the same name here, and that COMMANDS lists the same commands in order).
 * Strings in these messages may come from files the user did not write: the sidebar shows them as text.
 */
import { ValuePreview as SchemaValuePreview } from './schema';

export const COMM_TARGET = 'kernelcore.debugger';

export const COMMANDS = [
  'state',
  'step',
  'next',
  'finish',
  'step_timestep',
  'cont',
  'back',
  'back_timestep',
  'reverse_cont',
  'present',
  'run_to',
  'run_n',
  'goto_pause',
  'goto_event',
  'break_add',
  'break_enable',
  'break_remove',
  'watch_add',
  'provenance',
  'tensor',
  'tensor_send'
] as const;
export type Command = (typeof COMMANDS)[number];

export type WatchCond = 'nan' | 'overflow' | 'zero' | 'range' | 'unchanged' | 'grad_norm' | 'update_ratio';

export interface Request {
  type: 'request';
  id: number;
  command: Command;
  args?: {
    block?: number;
    op?: number;
    timestep?: number | null;
    n?: number;
    pause?: number;
    event?: number;
    kind?: 'op_type' | 'op' | 'write' | 'nan';
    op_type?: string | null;
    var?: string | null;
    id?: number;
    enabled?: boolean;
    cond?: WatchCond;
    lo?: number | null;
    hi?: number | null;
    name?: string;
    depth?: number;
    scope?: number | null;
    axes?: number[] | null;
    index?: number[] | null;
    diff?: boolean;
    target?: string;
    what?: 'value' | 'slice';
    /** tensor_send: replace `target` although it is defined (sent only after the person confirmed) */
    overwrite?: boolean;
  };
}

export interface Frame {
  block: number;
  op: number;
  op_type: string;
  timestep: number | null;
  scope: number;
  end: boolean;
}

export interface StackFrame extends Frame {
  depth: number;
  label: string;
}

export type ValuePreview = SchemaValuePreview;

export interface ScopeVars {
  scope: number;
  parent: number | null;
  label: string;
  visible: boolean;
  vars: Array<{
    name: string;
    kind: string;
    dtype?: string;
    shape?: number[];
    place?: string;
    scopes?: number[];
    preview: ValuePreview | null;
  }>;
}

export interface Breakpoint {
  id: number;
  kind: 'op_type' | 'op' | 'write' | 'nan';
  op_type: string | null;
  block: number | null;
  op: number | null;
  write: string | null;
  enabled: boolean;
  text: string;
}

export interface Watch {
  id: number;
  cond: WatchCond;
  var: string | null;
  op_type: string | null;
  lo: number | null;
  hi: number | null;
  enabled: boolean;
  text: string;
  hits: number;
}

export interface Hit {
  watch: number;
  event: number;
  block: number;
  op: number;
  op_type: string;
  timestep: number | null;
  var: string;
  message: string;
}

/** One write in a provenance answer; `inputs` are ids of other nodes (a shared input is one node). */
export interface OriginNode {
  id: number;
  name: string;
  kind: 'op' | 'bound' | 'initial' | 'unknown';
  event: number | null;
  block: number | null;
  op: number | null;
  op_type: string | null;
  timestep: number | null;
  scope: number | null;
  shape: number[] | null;
  note: string;
  inputs: number[];
  /** why its inputs were not followed: past the depth asked, or the node budget ran out */
  cut: null | 'depth' | 'nodes';
}

/** A provenance answer (`provenance`): the DAG of writes a value came from, each once. */
export interface Origin {
  root: number;
  nodes: OriginNode[];
  truncated: boolean;
  cut: number[];
  limits: { depth: number; nodes: number } | null;
}

/** The tensor panel's view of one variable at the cursor (`tensor`): the TensorViewer's traits. */
export interface TensorView {
  name: string;
  exists: boolean;
  scope: number | null;
  position_text: string;
  pause: number;
  shape: number[];
  dtype: string;
  place: string;
  axes: number[];
  index: number[];
  diff: boolean;
  has_previous: boolean;
  slice: { rows: number; cols: number; row_step: number; col_step: number; data: unknown[][]; min: unknown; max: unknown } | null;
  health: { negative: number; zero: number; positive: number; nan: number; pos_inf: number; neg_inf: number; total: number } | null;
  status: string;
}

/** What `tensor_send` bound in the kernel's namespace (`overwritten`: it replaced a defined name, as confirmed). */
export interface TensorSent {
  sent: string;
  what: 'value' | 'slice';
  name: string;
  overwritten: boolean;
}

/** The result of a `tensor_send` error reply whose target is defined and was not confirmed: nothing was bound;
 * `proposed` is a free name beside it (null when none was found). */
export interface NameTaken {
  taken: string;
  proposed: string | null;
}

export interface Session {
  id: number;
  position: Frame[];
  position_text: string;
  stop_reason: string;
  finished: boolean;
  at_present: boolean;
  pause: number;
  pauses: number;
  event: number;
  timestep: number | null;
  callstack: StackFrame[];
  variables: ScopeVars[];
  breakpoints: Breakpoint[];
  watches: Watch[];
  hits: Hit[];
  op_types: string[];
}

export interface State {
  version: 1;
  session: Session | null;
}

export interface Reply {
  type: 'reply';
  id: number;
  command: string;
  ok: boolean;
  error: string | null;
  result: null | Breakpoint | Watch | Origin | TensorView | TensorSent | NameTaken;
}

export interface StateMessage {
  type: 'state';
  state: State;
}

export type ServerMessage = Reply | StateMessage;

/** A message from the kernel, checked as far as the sidebar relies on it. */
export function isServerMessage(x: unknown): x is ServerMessage {
  if (!x || typeof x !== 'object') {
    return false;
  }
  const m = x as any;
  if (m.type === 'reply') {
    return typeof m.id === 'number' && typeof m.ok === 'boolean';
  }
  if (m.type === 'state') {
    return !!m.state && typeof m.state === 'object' && 'session' in m.state;
  }
  return false;
}
