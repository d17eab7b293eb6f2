import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DebuggerModel, KernelLike } from '../src/debugmodel';
import { ServerMessage, StateMessage } from '../src/protocol';
import { TensorPanel } from '../src/tensorpanel';
import { FakeComm, reply, tick } from './fake-comm';

// The sidebar's tensor panel: its edits go as `tensor_set` and the value is asked for again; a move of the
// cursor takes the old value down until the new one arrives.
const MESSAGES: ServerMessage[] = JSON.parse(readFileSync(resolve(__dirname, 'debug-messages.json'), 'utf8'));
const STATE = MESSAGES.find((m): m is StateMessage => m.type === 'state')!;

afterEach(() => {
  document.body.textContent = '';
});

const VIEW = {
  name: 'h', exists: true, scope: 3, position_text: 'block 0 op #0', pause: 0, shape: [2, 2], dtype: 'float32', place: 'CPUPlace',
  axes: [0, 1], index: [0, 0], diff: false, has_previous: false,
  slice: { rows: 2, cols: 2, row_step: 1, col_step: 1, data: [[1, 2], [3, 4]], min: 1, max: 4 },
  health: { negative: 0, zero: 0, positive: 4, nan: 0, pos_inf: 0, neg_inf: 0, total: 4 }, status: 'value'
};

async function openPanel() {
  const model = new DebuggerModel();
  const comm = new FakeComm();
  model.setKernel({ createComm: () => comm } as unknown as KernelLike);
  comm.deliver(STATE);
  const panel = new TensorPanel(model, 'h', 3);
  document.body.appendChild(panel.node);
  expect(comm.sent.at(-1)).toMatchObject({ command: 'tensor' });
  reply(comm, VIEW);
  await tick();
  return { comm, panel };
}

describe('the tensor panel edits', () => {
  it('sends Zero as tensor_set, then reads the value again', async () => {
    const { comm, panel } = await openPanel();
    expect(panel.local.get('editable')).toBe(true);
    (panel.node.querySelector('button.jp-Kernelcore-tvZero') as HTMLButtonElement).click();
    expect(comm.sent.at(-1)).toMatchObject({ command: 'tensor_set', args: { name: 'h', edit: 'zero', index: null, value: null, source: null } });
    reply(comm, { set: 'h', edit: 'zero', event: 7, forked: true });
    await tick();
    expect(comm.sent.at(-1)).toMatchObject({ command: 'tensor' });
    reply(comm, { ...VIEW, slice: { ...VIEW.slice, data: [[0, 0], [0, 0]], min: 0, max: 0 } });
    await tick();
    await tick();
    expect(panel.local.get('status')).toContain("set 'h' (zero) at trace event 7; the run forked");
    panel.dispose();
  });

  it('says why an edit was refused and reads nothing again', async () => {
    const { comm, panel } = await openPanel();
    panel.local.send({ type: 'edit', what: 'replace', source: 'nowhere' });
    expect(comm.sent.at(-1)).toMatchObject({ command: 'tensor_set', args: { edit: 'replace', source: 'nowhere' } });
    reply(comm, null, false, "'nowhere' is not defined in the notebook");
    await tick();
    expect(panel.local.get('status')).toBe("not edited: 'nowhere' is not defined in the notebook");
    expect(comm.sent.at(-1).command).toBe('tensor_set');
    panel.dispose();
  });

  it('takes the old value down when the cursor moves, until the new one arrives', async () => {
    const { comm, panel } = await openPanel();
    expect((panel.local.get('slice') as { data?: unknown }).data).toBeDefined();
    comm.deliver({ ...STATE, state: { ...STATE.state, session: { ...STATE.state.session!, pause: 1 } } });
    expect(panel.local.get('slice')).toEqual({});
    expect(panel.node.dataset.exists).toBe('pending');
    expect(comm.sent.at(-1)).toMatchObject({ command: 'tensor' });
    reply(comm, { ...VIEW, pause: 1, position_text: 'block 0 op #1' });
    await tick();
    expect((panel.local.get('slice') as { data?: unknown }).data).toBeDefined();
    expect(panel.node.dataset.exists).toBe('true');
    panel.dispose();
  });
});

describe('the tensor panel after a step into a new timestep', () => {
  it('says the value is the previous step\'s when the cursor cannot see it yet, and offers no edit of it', async () => {
    const states = MESSAGES.filter((m): m is StateMessage => m.type === 'state');
    const atT1 = states[states.length - 1]; // paused in timestep 1: scope 3 (timestep 0's step scope) not visible
    const model = new DebuggerModel();
    const comm = new FakeComm();
    model.setKernel({ createComm: () => comm } as unknown as KernelLike);
    comm.deliver(atT1);
    const panel = new TensorPanel(model, 'h', 3);
    document.body.appendChild(panel.node);
    reply(comm, { ...VIEW, scope: 3, position_text: 'block 0 op #0 recurrent > block 1 op #0 matmul_v2 t=1' });
    await tick();
    const where = panel.node.querySelector('.jp-Kernelcore-tpWhere')!.textContent!;
    expect(where).toContain("t=1: 'h' has no value the cursor's op sees; shown: scope 3: recurrent step t=0");
    expect(panel.node.dataset.elsewhere).toBe('true');
    expect(panel.local.get('position')).toContain("recurrent step t=0");
    expect(panel.local.get('editable')).toBe(false);
    comm.deliver({ ...atT1, state: { ...atT1.state, session: { ...atT1.state.session!, pause: 9 } } });
    reply(comm, { ...VIEW, scope: 4, pause: 9, position_text: 'block 0 op #0 recurrent > block 1 end t=1' });
    await tick();
    expect(panel.node.querySelector('.jp-Kernelcore-tpWhere')!.textContent).toBe('at block 0 op #0 recurrent > block 1 end t=1, scope 4');
    expect(panel.node.dataset.elsewhere).toBe('false');
    expect(panel.local.get('editable')).toBe(true);
    panel.dispose();
  });
});
