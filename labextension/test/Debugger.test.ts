import { afterEach, describe, expect, it } from 'vitest';
import DebuggerWidget, { DebuggerView, positionOps } from '../src/views/Debugger';
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
    stop_reason: 'step',
    finished: false,
    time_travel: -1,
    ...extra
  };
}

describe('Debugger', () => {
  it('parses positions', () => {
    expect(positionOps('block 0 op #3 recurrent > block 1 op #0 mul t=2')).toEqual(['o0:3', 'o1:0']);
    expect(positionOps('finished')).toEqual([]);
  });

  it('sends the step controls', async () => {
    const el = container();
    const m = new FakeModel(state());
    const cleanup = await DebuggerWidget.render({ model: m, el });
    for (const action of ['step', 'next', 'finish', 'step_timestep', 'cont', 'back']) {
      (el.querySelector(`.jp-Kernelcore-action-${action}`) as HTMLButtonElement).click();
    }
    expect(m.sent.map(x => x.type)).toEqual(['step', 'next', 'finish', 'step_timestep', 'cont', 'back']);
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
    expect(view.graph.left.nodeEls.get('o0:1')!.classList.contains('jp-Kernelcore-current')).toBe(false);
    expect(view.graph.left.nodeEls.get('o0:2')!.classList.contains('jp-Kernelcore-current')).toBe(true);
    m.pythonSets('position', 'finished');
    m.pythonSets('finished', true);
    expect((el.querySelector('.jp-Kernelcore-action-step') as HTMLButtonElement).disabled).toBe(true);
    expect((el.querySelector('.jp-Kernelcore-action-back') as HTMLButtonElement).disabled).toBe(false);
    expect(el.querySelector('.jp-Kernelcore-position')!.textContent).toBe('finished');
    expect(el.querySelectorAll('g.node.jp-Kernelcore-current').length).toBe(0);
    // back in time after the end: the position names an op again and stepping is possible
    m.pythonSets('position', 'before block 0 op #3 sgd (time travel: event 9)');
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
});
