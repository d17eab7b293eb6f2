/** Small ProgramJSON / trace / forest values shaped as docs/frontend-contract.md says. */
import type { BlockJSON, OpJSON, ProgramJSON, ScopeForestJSON, TraceJSON, VarJSON } from '../src/schema';

type Loose<T, K extends keyof T> = Partial<T> & Pick<T, K> & Record<string, unknown>;
interface LooseBlock {
  idx: number;
  parent: number;
  vars: Array<Loose<VarJSON, 'id' | 'name'>>;
  ops: Array<Loose<OpJSON, 'id' | 'idx' | 'type'>>;
  groups?: BlockJSON['groups'];
}

/** A ProgramJSON from the fields a test cares about: the rest as Python writes them when they say nothing. */
export function program(blocks: LooseBlock[], extra: Partial<ProgramJSON> = {}): ProgramJSON {
  // no groups given: a version 1 program, whose groups the view makes itself
  const full = (b: LooseBlock): BlockJSON => ({
    idx: b.idx,
    parent: b.parent,
    groups: b.groups as BlockJSON['groups'],
    vars: b.vars.map(v => ({ type: 'LOD_TENSOR', dtype: null, shape: null, persistable: false, parameter: false, kind: 'other', group: null, ...v }) as VarJSON),
    ops: b.ops.map(o => ({ role: 'forward', inputs: {}, outputs: {}, attrs: {}, sub_blocks: [], comment: '', unsupported: false, group: null, ...o }) as OpJSON)
  });
  return { schema: 'kernelcore.program', version: 1, pruned: null, dot: null, ...extra, blocks: blocks.map(full) };
}

export const HOSTILE = '<img src=x onerror=alert(1)>';
export const HOSTILE_OP = '<script>alert(2)</script>';

/** A 2-layer MLP with a backward and an sgd op, and one hostile variable name. */
export function mlp(): ProgramJSON {
  const v = (name: string, kind: VarJSON['kind'], extra: object = {}) => ({
    id: `v0:${name}`,
    name,
    type: 'LOD_TENSOR',
    dtype: 'float32',
    shape: [-1, 4],
    persistable: kind === 'param',
    parameter: kind === 'param',
    kind,
    ...extra
  });
  return program(
    [
      {
        idx: 0,
        parent: -1,
        vars: [v('x', 'data'), v('w', 'param'), v('h', 'tmp'), v('y', 'tmp'), v('w@GRAD', 'grad'), v(HOSTILE, 'tmp')],
        ops: [
          { id: 'o0:0', idx: 0, type: 'mul', role: 'forward', inputs: { X: ['x'], Y: ['w'] }, outputs: { Out: ['h'] }, attrs: { x_num_col_dims: 1 }, sub_blocks: [], comment: 'Mul: Out = X * Y' },
          { id: 'o0:1', idx: 1, type: 'relu', role: 'forward', inputs: { X: ['h'] }, outputs: { Out: ['y'] }, attrs: {}, sub_blocks: [], comment: '' },
          { id: 'o0:2', idx: 2, type: 'mul_grad', role: 'backward', inputs: { X: ['x'], Y: ['w'] }, outputs: { 'Y@GRAD': ['w@GRAD'] }, attrs: {}, sub_blocks: [], comment: '' },
          { id: 'o0:3', idx: 3, type: 'sgd', role: 'optimize', inputs: { Param: ['w'], Grad: ['w@GRAD'] }, outputs: { ParamOut: ['w'] }, attrs: {}, sub_blocks: [], comment: '' },
          { id: 'o0:4', idx: 4, type: HOSTILE_OP, role: 'forward', inputs: { X: ['y'] }, outputs: { Out: [HOSTILE] }, attrs: { note: HOSTILE }, sub_blocks: [], comment: HOSTILE }
        ]
      }
    ],
    { dot: 'digraph { "o0:0" }' }
  );
}

/** A program with an RNN-like sub-block. */
export function withSubBlock(): ProgramJSON {
  return program([
      {
        idx: 0,
        parent: -1,
        vars: [
          { id: 'v0:x', name: 'x', dtype: 'float32', shape: [5, 3], kind: 'data' },
          { id: 'v0:h0', name: 'h0', dtype: 'float32', shape: [3], kind: 'data' },
          { id: 'v0:out', name: 'out', dtype: 'float32', shape: [5, 3], kind: 'tmp' }
        ],
        ops: [{ id: 'o0:0', idx: 0, type: 'recurrent', role: 'forward', inputs: { inputs: ['x'], initial_states: ['h0'] }, outputs: { outputs: ['out'] }, attrs: {}, sub_blocks: [1] }]
      },
      {
        idx: 1,
        parent: 0,
        vars: [
          { id: 'v1:x_t', name: 'x_t', dtype: 'float32', shape: [3], kind: 'tmp' },
          { id: 'v1:h_prev', name: 'h_prev', dtype: 'float32', shape: [3], kind: 'tmp' },
          { id: 'v1:h', name: 'h', dtype: 'float32', shape: [3], kind: 'tmp' }
        ],
        ops: [
          { id: 'o1:0', idx: 0, type: 'elementwise_add', role: 'forward', inputs: { X: ['x_t'], Y: ['h_prev'] }, outputs: { Out: ['h'] }, attrs: {} },
          { id: 'o1:1', idx: 1, type: 'tanh', role: 'forward', inputs: { X: ['h'] }, outputs: { Out: ['h'] }, attrs: {} }
        ]
      }
  ]);
}

/** A chain of n ops in block 0 (a big program). */
export function chain(n: number): ProgramJSON {
  const vars: LooseBlock['vars'] = [];
  const ops: LooseBlock['ops'] = [];
  for (let i = 0; i <= n; i++) {
    vars.push({ id: `v0:t${i}`, name: `t${i}`, dtype: 'float32', shape: [2], kind: i === 0 ? 'data' : 'tmp' });
  }
  for (let i = 0; i < n; i++) {
    ops.push({ id: `o0:${i}`, idx: i, type: 'relu', role: 'forward', inputs: { X: [`t${i}`] }, outputs: { Out: [`t${i + 1}`] }, attrs: {} });
  }
  return program([{ idx: 0, parent: -1, vars, ops }]);
}

export function trace(): TraceJSON {
  return {
    schema: 'kernelcore.trace',
    version: 1,
    retain: 'shapes',
    meta: {},
    events: [
      { seq: 0, kind: 'run_begin', t_ns: 0, scope: 1, block: 0, message: '<program>' },
      { seq: 1, kind: 'var_create', t_ns: 10, scope: 1, block: 0, name: 'x' },
      { seq: 2, kind: 'op_run', t_ns: 2000, scope: 1, block: 0, op: 0, op_type: 'mul', dur_ns: 1500, inputs: [['X', 'x', [2, 2], 'float32']], outputs: [['Out', 'h', [2, 2], 'float32']], kernel: 'math.mul[cpu]', place: 'CPUPlace' },
      { seq: 3, kind: 'scope_push', t_ns: 2100, scope: 2, parent_scope: 1, timestep: 0, message: 'recurrent step' },
      { seq: 4, kind: 'op_run', t_ns: 3000, scope: 2, block: 1, op: 0, op_type: 'relu', dur_ns: 500, timestep: 0 },
      { seq: 5, kind: 'op_run', t_ns: 4000, scope: 1, block: 0, op: 4, op_type: HOSTILE_OP, dur_ns: 100 },
      { seq: 6, kind: 'error', t_ns: 4100, scope: 1, block: 0, op: 4, op_type: HOSTILE_OP, message: HOSTILE },
      { seq: 7, kind: 'run_end', t_ns: 5000, scope: 1, block: 0 }
    ]
  };
}

export function forest(): ScopeForestJSON {
  return {
    schema: 'kernelcore.scope_forest',
    version: 1,
    roots: [1],
    scopes: [
      { id: 1, parent: null, depth: 0, origin: {}, kids: [2, 3], vars: [
        { name: 'x', kind: 'tensor', dtype: 'float32', shape: [5, 3], place: 'CPUPlace' },
        { name: 'steps', kind: 'step_scopes', shape: [2], scopes: [2, 3] },
        { name: HOSTILE, kind: 'tensor', dtype: 'float32', shape: [2], place: 'CPUPlace' }
      ] },
      { id: 2, parent: 1, depth: 1, origin: { op: 'recurrent', block: 0, op_idx: 0, timestep: 0, what: 'recurrent step' }, kids: [], vars: [
        { name: 'h', kind: 'tensor', dtype: 'float32', shape: [3], place: 'CPUPlace' }
      ] },
      { id: 3, parent: 1, depth: 1, origin: { op: 'recurrent', block: 0, op_idx: 0, timestep: 1, what: 'recurrent step' }, kids: [], vars: [
        { name: 'h', kind: 'tensor', dtype: 'float32', shape: [3], place: 'CPUPlace' }
      ] }
    ]
  };
}

export const PREVIEW_2D = {
  shape: [2, 3], dtype: 'float32', place: 'CPUPlace', min: -1, max: 2, mean: 0.5, std: 1, nan: 1, inf: 0,
  sample: [[-1, 0, 1], [2, 'NaN', 0.5]], kind: 'heatmap' as const
};
export const PREVIEW_1D = {
  shape: [4], dtype: 'float32', place: 'CPUPlace', min: 0, max: 3, mean: 1.5, std: 1.1, nan: 0, inf: 0,
  sample: [[0, 1, 2, 3]], kind: 'sparkline' as const
};
