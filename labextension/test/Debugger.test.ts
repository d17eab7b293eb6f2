import { afterEach, describe, expect, it } from 'vitest';
import DebuggerWidget, { DebuggerView } from '../src/views/Debugger';
import { frameOps } from '../src/schema';
import { MOVES } from '../src/protocol';
import { forest, mlp, trace } from './fixtures';
import { container, FakeModel } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

function state(extra: Record<string, unknown> = {}) {
  return {
    program: mlp(),
    pruned_program: null,
    selected: '',
    details: {},
    search: '',
    collapsed: [],
    forest: forest(),
    opened: {},
    mode: 'live',
    num_steps: 0,
    timestep: 0,
    step_scope: null,
    memory_flow: [],
    status: '',
    events: trace().events,
    filter: {},
    selected_event: -1,
    position: 'block 0 op #1 relu',
    frames: [fr(0, 1, 'relu')],
    stop_reason: 'step',
    finished: false,
    time_travel: -1,
    ...extra
  };
}

function fr(block: number, op: number, op_type: string, timestep: number | null = null, end = false) {
  return { block, op, op_type, timestep, scope: block, end };
}

describe('Debugger', () => {
  it('reads positions from frames, not from text', () => {
    expect(frameOps([fr(0, 3, 'recurrent'), fr(1, 0, 'mul', 2)])).toEqual(['o0:3', 'o1:0']);
    expect(frameOps([fr(0, 3, 'recurrent'), fr(1, 6, 'end of block', 2, true)])).toEqual(['o0:3']);
    expect(frameOps([])).toEqual([]);
  });

  it('sends the step controls', async () => {
    const el = container();
    const m = new FakeModel(state());
    const cleanup = await DebuggerWidget.render({ model: m, el });
    const all = MOVES.map(m => m.name);
    for (const action of all) {
      (el.querySelector(`.jp-Kernelcore-action-${action}`) as HTMLButtonElement).click();
    }
    expect(m.sent.map(x => x.type)).toEqual(all);
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('marks the current op, follows Python, and disables stepping when finished', async () => {
    const el = container();
    const m = new FakeModel(state());
    const view = new DebuggerView(m, el);
    await view.ready;
    expect(view.graph.left.nodeEls.get('o0:1')!.classList.contains('jp-Kernelcore-current')).toBe(true);
    expect(el.querySelector('.jp-Kernelcore-position')!.textContent).toBe('block 0 op #1 relu');
    m.pythonSets('position', 'block 0 op #2 mul_grad');
    m.pythonSets('frames', [fr(0, 2, 'mul_grad')]);
    expect(view.graph.left.nodeEls.get('o0:1')!.classList.contains('jp-Kernelcore-current')).toBe(false);
    expect(view.graph.left.nodeEls.get('o0:2')!.classList.contains('jp-Kernelcore-current')).toBe(true);
    m.pythonSets('position', 'end of the run');
    m.pythonSets('frames', []);
    m.pythonSets('stop_reason', 'finished');
    m.pythonSets('finished', true);
    expect((el.querySelector('.jp-Kernelcore-action-step') as HTMLButtonElement).disabled).toBe(true);
    expect((el.querySelector('.jp-Kernelcore-action-back') as HTMLButtonElement).disabled).toBe(false);
    expect(el.querySelector('.jp-Kernelcore-position')!.textContent).toBe('end of the run');
    expect(el.querySelector('.jp-Kernelcore-status')!.textContent).toBe('finished');
    expect(el.querySelectorAll('g.node.jp-Kernelcore-current').length).toBe(0);
    // back in time after the end: the position names an op again and stepping is possible
    m.pythonSets('position', 'block 0 op #3 sgd');
    m.pythonSets('frames', [fr(0, 3, 'sgd')]);
    m.pythonSets('time_travel', 9);
    expect(view.graph.left.nodeEls.get('o0:3')!.classList.contains('jp-Kernelcore-current')).toBe(true);
    expect((el.querySelector('.jp-Kernelcore-action-step') as HTMLButtonElement).disabled).toBe(false);
    view.dispose();
  });

  it('links a timeline event to the graph and the forest', async () => {
    const el = container();
    const m = new FakeModel(state());
    const view = new DebuggerView(m, el);
    await view.ready;
    (el.querySelectorAll('.jp-Kernelcore-event')[4] as HTMLElement).click(); // op_run relu in block 1, scope 2
    expect(m.get('selected_event')).toBe(4);
    expect(m.get('selected')).toBe('o1:0');
    expect(m.sent).toEqual([
      { type: 'select', seq: 4 },
      { type: 'select', id: 'o1:0' }
    ]);
    expect(el.querySelector('.jp-Kernelcore-highlight')!.textContent).toContain('scope 2');
    view.dispose();
  });

  it('shows the RNN panel only when there are timesteps', async () => {
    const el = container();
    const m = new FakeModel(state());
    const view = new DebuggerView(m, el);
    const box = el.querySelector('.jp-Kernelcore-dbgRNN') as HTMLElement;
    expect(box.style.display).toBe('none');
    m.pythonSets('num_steps', 3);
    expect(box.style.display).toBe('');
    view.dispose();
  });

  it("gives the graph's details the debug actions and lists the session's breakpoints", async () => {
    const el = container();
    const m = new FakeModel(state({ debug: { live: true, text: "this debugger's session", ok: true }, breakpoints: [] }));
    const cleanup = await DebuggerWidget.render({ model: m, el });
    expect(el.querySelector('.jp-Kernelcore-dbgBreakpoints')!.textContent).toContain('none');
    m.set('selected', 'o0:1');
    const brk = el.querySelector('button.jp-Kernelcore-breakHere') as HTMLButtonElement;
    expect(brk.disabled).toBe(false);
    brk.click();
    expect(m.sent.filter(x => x.type === 'debug')).toEqual([{ type: 'debug', action: 'break_op', block: 0, op: 1 }]);
    m.pythonSets('breakpoints', [
      { id: 1, kind: 'op', text: '#1 block 0 op #1', enabled: true },
      { id: 2, kind: 'watch', text: '#2 <b>h</b> nan', enabled: false }
    ]);
    const items = [...el.querySelectorAll('.jp-Kernelcore-dbgBreakpoint')];
    expect(items.map(i => i.textContent)).toEqual(['#1 block 0 op #1', '#2 <b>h</b> nan']);
    expect(items[1].classList.contains('jp-Kernelcore-muted')).toBe(true);
    expect(el.querySelector('.jp-Kernelcore-dbgBreakpoints b')).toBeNull(); // names are text, never markup
    m.pythonSets('debug', { live: false, text: 'no session', ok: true });
    expect((el.querySelector('button.jp-Kernelcore-breakHere') as HTMLButtonElement).disabled).toBe(true);
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });
});
