import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ModelDebugActions, renderActions } from '../src/debugactions';
import { DebuggerModel, KernelLike } from '../src/debugmodel';
import { ServerMessage, StateMessage, TensorView } from '../src/protocol';
import { KernelcoreSidebar } from '../src/sidebar';
import { TensorPanel } from '../src/tensorpanel';
import ProgramGraphWidget from '../src/views/ProgramGraph';
import { mlp } from './fixtures';
import { container, FakeModel } from './fake-model';
import { FakeComm, reply, tick } from './fake-comm';

// Real state messages from the kernel side (tests/test_debug_comm.py checks this file).
const MESSAGES: ServerMessage[] = JSON.parse(readFileSync(resolve(__dirname, 'debug-messages.json'), 'utf8'));
const STATES = MESSAGES.filter((m): m is StateMessage => m.type === 'state');

afterEach(() => {
  document.body.textContent = '';
});

class FakeKernel implements KernelLike {
  comm = new FakeComm();
  createComm(): FakeComm {
    return this.comm;
  }
}

function connected() {
  const model = new DebuggerModel();
  const kernel = new FakeKernel();
  model.setKernel(kernel);
  kernel.comm.deliver(STATES[0]);
  return { model, comm: kernel.comm };
}

function button(el: Element, cls: string): HTMLButtonElement {
  const b = el.querySelector(`button.${cls}`) as HTMLButtonElement | null;
  if (!b) {
    throw new Error(`no button .${cls}`);
  }
  return b;
}

describe('debug actions in a ProgramGraph widget (anywidget: messages to Python)', () => {
  it('offers Break here / Run to here for an op, disabled with the reason when no session is live', async () => {
    const el = container();
    const m = new FakeModel({ program: mlp(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [], debug: { live: false, text: 'no live debug session in this kernel', ok: true } });
    const cleanup = await ProgramGraphWidget.render({ model: m as any, el });
    m.set('selected', 'o0:1');
    expect(button(el, 'jp-Kernelcore-breakHere').disabled).toBe(true);
    expect(el.querySelector('.jp-Kernelcore-debugNote')!.textContent).toContain('no live debug session');
    m.set('debug', { live: true, text: 'live debug session: paused at block 0 op #0 mul', ok: true });
    button(el, 'jp-Kernelcore-breakHere').click();
    button(el, 'jp-Kernelcore-runToHere').click();
    expect(m.sent.filter(x => x.type === 'debug')).toEqual([
      { type: 'debug', action: 'break_op', block: 0, op: 1 },
      { type: 'debug', action: 'run_to', block: 0, op: 1 }
    ]);
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('offers Break on write / Watch... for a variable', async () => {
    const el = container();
    const m = new FakeModel({ program: mlp(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [], debug: { live: true, text: 'live', ok: true } });
    const cleanup = await ProgramGraphWidget.render({ model: m as any, el });
    m.set('selected', 'v0:h');
    expect(el.querySelector('.jp-Kernelcore-breakHere')).toBeNull();
    button(el, 'jp-Kernelcore-breakOnWrite').click();
    const form = el.querySelector('.jp-Kernelcore-watchForm')!;
    expect(form.classList.contains('jp-Kernelcore-hidden')).toBe(true);
    button(el, 'jp-Kernelcore-watchVar').click();
    expect(form.classList.contains('jp-Kernelcore-hidden')).toBe(false);
    (form.querySelector('select') as HTMLSelectElement).value = 'range';
    (form.querySelector('.jp-Kernelcore-watchFormLo') as HTMLInputElement).value = '-1';
    (form.querySelector('.jp-Kernelcore-watchFormHi') as HTMLInputElement).value = '2.5';
    button(el, 'jp-Kernelcore-watchAdd').click();
    expect(m.sent.filter(x => x.type === 'debug')).toEqual([
      { type: 'debug', action: 'break_write', var: 'h' },
      { type: 'debug', action: 'watch', var: 'h', cond: 'range', lo: -1, hi: 2.5 }
    ]);
    m.set('debug', { live: true, text: 'not done: a range watch needs lo= and hi=', ok: false });
    expect(el.querySelector('.jp-Kernelcore-debugNote')!.classList.contains('jp-Kernelcore-error')).toBe(true);
    cleanup();
  });

  it("shows Python's sentence, not the last outcome, once another node is selected", async () => {
    const el = container();
    const idle = "live debug session: this debugger's session";
    const m = new FakeModel({ program: mlp(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [], debug: { live: true, text: idle, ok: true } });
    const cleanup = await ProgramGraphWidget.render({ model: m as any, el });
    m.set('selected', 'o0:1');
    button(el, 'jp-Kernelcore-breakHere').click();
    m.set('debug', { live: true, text: 'added breakpoint #3 before block 0 op #1', ok: true });
    expect(el.querySelector('.jp-Kernelcore-debugNote')!.textContent).toBe('added breakpoint #3 before block 0 op #1');
    m.set('selected', 'o0:0');
    const note = el.querySelector('.jp-Kernelcore-debugNote')!;
    expect(note.textContent).toBe(idle);
    expect(note.classList.contains('jp-Kernelcore-error')).toBe(false);
    cleanup();
  });
});

describe('debug actions over the debugger model (outputs and files)', () => {
  it('turns actions into comm requests and reports the outcome', async () => {
    const { model, comm } = connected();
    const d = new ModelDebugActions(model);
    let heard = 0;
    const off = d.onChange(() => heard++);
    expect(d.live).toBe(true);
    expect(d.text).toContain('paused at');
    d.act({ action: 'break_write', var: 'h' });
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ command: 'break_add', args: { kind: 'write', var: 'h' } });
    reply(comm, { id: 7, kind: 'write', op_type: null, block: null, op: null, write: 'h', enabled: true, text: "#7 write to 'h'" });
    await tick();
    expect(d.text).toBe("added breakpoint #7 write to 'h'");
    expect(heard).toBeGreaterThan(0);
    d.act({ action: 'break_op', block: 1, op: 2 });
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ command: 'break_add', args: { kind: 'op', block: 1, op: 2 } });
    reply(comm, null, false, 'no op #2');
    await tick();
    expect(d.ok).toBe(false);
    expect(d.text).toContain('not done: no op #2');
    off();
    model.setKernel(null);
    expect(d.live).toBe(false);
    expect(d.text).toContain('no live debug session');
  });

  it('says where "Run to here" stopped from the state that follows its reply, as the sidebar does', async () => {
    const { model, comm } = connected();
    const d = new ModelDebugActions(model);
    d.act({ action: 'run_to', block: 1, op: 0 });
    reply(comm, null); // the kernel replies first, then pushes the state the move led to
    await tick();
    const moved = STATES.find(m => m.state.session!.position_text !== STATES[0].state.session!.position_text)!;
    comm.deliver(moved);
    expect(d.text).toBe(`ran to ${moved.state.session!.position_text}`);
    expect(d.text).toBe(`ran to ${model.session!.position_text}`);
  });

  it("keeps an action's outcome only while the node it was about stays selected", async () => {
    const { model, comm } = connected();
    const d = new ModelDebugActions(model);
    const host = document.createElement('div');
    renderActions(host, d, { kind: 'op', block: 0, op: 0, label: 'recurrent #0 of block 0' });
    button(host, 'jp-Kernelcore-breakHere').click();
    reply(comm, { id: 4, kind: 'op', op_type: null, block: 0, op: 0, write: null, enabled: true, text: '#4 before block 0 op #0' });
    await tick();
    renderActions(host, d, { kind: 'op', block: 0, op: 0, label: 'recurrent #0 of block 0' });
    expect(host.querySelector('.jp-Kernelcore-debugNote')!.textContent).toBe('added breakpoint #4 before block 0 op #0');
    renderActions(host, d, { kind: 'var', name: 'x' });
    const note = host.querySelector('.jp-Kernelcore-debugNote')!.textContent!;
    expect(note).not.toContain('added breakpoint');
    expect(note).toContain('paused at');
  });

  it("refuses a session that lacks one of the shown program's op types, and says which", () => {
    const { model } = connected(); // the session runs the RNN program (its op types are in the state)
    const shown = mlp();
    const d = new ModelDebugActions(model, shown);
    const have = STATES[0].state.session!.op_types;
    const missing = [...new Set(shown.blocks.flatMap(b => b.ops.map(o => o.type)))].sort().find(t => !have.includes(t))!;
    expect(missing).toBeTruthy();
    expect(d.live).toBe(false);
    expect(d.text).toBe(`the live debug session runs another program than this graph shows (it has no '${missing}' op)`);
    // a program whose op types the session has: accepted
    const same = JSON.parse(JSON.stringify(shown));
    same.blocks.forEach((b: any) => b.ops.forEach((o: any, i: number) => (o.type = have[i % have.length])));
    const ok = new ModelDebugActions(model, same);
    expect(ok.live).toBe(true);
    expect(ok.text).toContain('paused at');
  });
});

function view(over: Partial<TensorView>): TensorView {
  return {
    name: 'h', exists: true, scope: 3, position_text: 'block 1 op #4 assign t=0', pause: 5, shape: [2, 2], dtype: 'float32', place: 'CPUPlace',
    axes: [0, 1], index: [0, 0], diff: false, has_previous: false,
    slice: { rows: 2, cols: 2, row_step: 1, col_step: 1, data: [[1, 2], [3, 4]], min: 1, max: 4 },
    health: { negative: 0, zero: 0, positive: 4, nan: 0, pos_inf: 0, neg_inf: 0, total: 4 },
    status: 'value: axes 0 x 1', ...over
  };
}

describe('the tensor panel (sidebar Variables -> View)', () => {
  it('asks for the value at the cursor, follows moves and says when the variable is gone', async () => {
    const { model, comm } = connected();
    const panel = new TensorPanel(model, 'h', 3);
    document.body.appendChild(panel.node);
    const ask = comm.sent[comm.sent.length - 1];
    expect(ask).toMatchObject({ command: 'tensor', args: { name: 'h', scope: 3, diff: false } });
    // what the kernel really answered (tests/test_debug_comm.py's scenario)
    const real = (MESSAGES.find(m => m.type === 'reply' && m.command === 'tensor') as any).result as TensorView;
    reply(comm, real);
    await tick();
    expect(panel.local.get('slice').data).toEqual(real.slice!.data);
    expect(panel.local.get('shape')).toEqual(real.shape);
    expect(panel.node.textContent).toContain(`positive ${real.health!.positive}`);
    expect(panel.node.dataset.exists).toBe('true');
    const n = comm.sent.length;
    comm.deliver(STATES[0]); // the same cursor: nothing to ask
    expect(comm.sent.length).toBe(n);
    const moved = JSON.parse(JSON.stringify(STATES[0]));
    moved.state.session.pause += 1;
    comm.deliver(moved); // the user stepped: ask again
    expect(comm.sent.length).toBe(n + 1);
    reply(comm, view({ exists: false, scope: null, shape: [], slice: null, health: null, status: "'h' does not exist at end of the run" }));
    await tick();
    expect(panel.node.dataset.exists).toBe('false');
    expect(panel.node.textContent).toContain("'h' does not exist");
    // the view's own controls and "send to notebook" go over the comm too
    panel.local.send({ type: 'send', name: 'h_now', what: 'slice' });
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ command: 'tensor_send', args: { name: 'h', target: 'h_now', what: 'slice' } });
    reply(comm, { sent: 'h_now', what: 'slice', name: 'h' });
    await tick();
    expect(panel.local.get('status')).toBe("sent the slice to the notebook as 'h_now'");
    panel.local.send({ type: 'view', axes: [1, 0], index: [0, 0], diff: true });
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ command: 'tensor', args: { axes: [1, 0], diff: true } });
    panel.dispose();
  });
});

describe('the sidebar offers View on each tensor', () => {
  it('calls onViewTensor with the name and scope, not a provenance request', () => {
    const { model, comm } = connected();
    const sb = new KernelcoreSidebar(model);
    const opened: Array<[string, number]> = [];
    sb.onViewTensor = (name, scope) => opened.push([name, scope]);
    const withVars = STATES.find(m => m.state.session?.variables.some(sc => sc.vars.some(v => v.kind === 'tensor')))!;
    comm.deliver(withVars);
    const buttons = sb.node.querySelectorAll('button.jp-Kernelcore-varView');
    const tensors = withVars.state.session!.variables.flatMap(sc => sc.vars.filter(v => v.kind === 'tensor').map(v => [v.name, sc.scope]));
    expect(buttons.length).toBe(tensors.length);
    const n = comm.sent.length;
    (buttons[0] as HTMLButtonElement).click();
    expect(opened).toEqual([tensors[0]]);
    expect(comm.sent.length).toBe(n); // no provenance request for this click
    sb.dispose();
  });
});
