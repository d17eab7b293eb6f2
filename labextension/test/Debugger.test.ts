import { afterEach, describe, expect, it } from 'vitest';
import DebuggerWidget, { debuggerChildren, DebuggerView } from '../src/views/Debugger';
import { frameOps } from '../src/schema';
import { MOVES } from '../src/protocol';
import { forest, mlp, trace } from './fixtures';
import { container, FakeModel, withChildren } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

interface Kids {
  graph: FakeModel;
  forest: FakeModel;
  stepper: FakeModel | null;
  timeline: FakeModel;
}

/** A Debugger's model and its children's, as Python's composite sends them. */
function debuggerModels(opts: { steps?: boolean; own?: Record<string, unknown>; graph?: Record<string, unknown> } = {}): { m: FakeModel; kids: Kids } {
  const kids: Kids = {
    graph: new FakeModel({ program: mlp(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [], ...opts.graph }),
    forest: new FakeModel({ forest: forest(), opened: {} }),
    stepper: opts.steps ? new FakeModel({ mode: 'live', num_steps: 3, timestep: 0, step_scope: {}, memory_flow: [], status: '', rnn_op: 'o0:0' }) : null,
    timeline: new FakeModel({ events: trace().events, filter: {}, selected_event: -1, truncated: 0 })
  };
  const own = { position: 'block 0 op #1 relu', frames: [fr(0, 1, 'relu')], stop_reason: 'step', finished: false, time_travel: -1, breakpoints: [], ...opts.own };
  const m = withChildren(new FakeModel(own), { graph: kids.graph, forest: kids.forest, stepper: kids.stepper, timeline: kids.timeline });
  return { m, kids };
}

async function view_(opts: Parameters<typeof debuggerModels>[0] = {}) {
  const el = container();
  const { m, kids } = debuggerModels(opts);
  const v = new DebuggerView(m, el, await debuggerChildren(m));
  await v.ready;
  return { el, m, kids, v };
}

function listeners(m: FakeModel, kids: Kids): number {
  return [m, kids.graph, kids.forest, kids.stepper, kids.timeline].reduce((n, x) => n + (x?.listenerCount() ?? 0), 0);
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
    const { m, kids } = debuggerModels({ steps: true });
    const cleanup = await DebuggerWidget.render({ model: m, el });
    const all = MOVES.map(m => m.name);
    for (const action of all) {
      (el.querySelector(`.jp-Kernelcore-action-${action}`) as HTMLButtonElement).click();
      m.set('busy', true); // Python runs the move, then says it stopped
      m.set('busy', false);
    }
    expect(m.sent.map(x => x.type)).toEqual(all);
    // the timesteps panel's "next" is the Debugger's step to the next timestep, not the stepper's own
    (el.querySelector('.jp-Kernelcore-dbgRNN .jp-Kernelcore-next') as HTMLButtonElement).click();
    expect(m.sent[m.sent.length - 1]).toEqual({ type: 'step_timestep' });
    expect(kids.stepper!.sent).toEqual([]);
    cleanup();
    expect(listeners(m, kids)).toBe(0);
  });

  it('marks the current op, follows Python, and disables stepping when finished', async () => {
    const { el, m, v: view } = await view_();
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
    const { el, m, kids, v: view } = await view_();
    (el.querySelectorAll('.jp-Kernelcore-event')[4] as HTMLElement).click(); // op_run relu in block 1, scope 2
    expect(kids.timeline.get('selected_event')).toBe(4);
    expect(kids.graph.get('selected')).toBe('o1:0');
    expect(kids.timeline.sent).toEqual([{ type: 'select', seq: 4 }]); // each child tells its own Python widget
    expect(kids.graph.sent).toEqual([{ type: 'select', id: 'o1:0' }]);
    expect(m.sent).toEqual([]);
    expect(el.querySelector('.jp-Kernelcore-highlight')!.textContent).toContain('scope 2');
    view.dispose();
  });

  it('shows the RNN panel only when it has a stepper (a recurrent op)', async () => {
    const without = await view_();
    expect((without.el.querySelector('.jp-Kernelcore-dbgRNN') as HTMLElement).style.display).toBe('none');
    expect(without.v.stepper).toBeNull();
    without.v.dispose();
    const withSteps = await view_({ steps: true });
    expect((withSteps.el.querySelector('.jp-Kernelcore-dbgRNN') as HTMLElement).style.display).toBe('');
    withSteps.v.dispose();
  });

  it("gives the graph's details the debug actions and lists the session's breakpoints", async () => {
    const el = container();
    const { m, kids } = debuggerModels({ graph: { debug: { live: true, text: "this debugger's session", ok: true } } });
    const cleanup = await DebuggerWidget.render({ model: m, el });
    expect(el.querySelector('.jp-Kernelcore-dbgBreakpoints')!.textContent).toContain('none');
    kids.graph.set('selected', 'o0:1');
    const brk = el.querySelector('button.jp-Kernelcore-breakHere') as HTMLButtonElement;
    expect(brk.disabled).toBe(false);
    brk.click();
    expect(kids.graph.sent.filter(x => x.type === 'debug')).toEqual([{ type: 'debug', action: 'break_op', block: 0, op: 1 }]);
    m.pythonSets('breakpoints', [
      { id: 1, kind: 'op', text: '#1 block 0 op #1', enabled: true },
      { id: 2, kind: 'watch', text: '#2 <b>h</b> nan', enabled: false }
    ]);
    const items = [...el.querySelectorAll('.jp-Kernelcore-dbgBreakpoint')];
    expect(items.map(i => i.textContent)).toEqual(['#1 block 0 op #1', '#2 <b>h</b> nan']);
    expect(items[1].classList.contains('jp-Kernelcore-muted')).toBe(true);
    expect(el.querySelector('.jp-Kernelcore-dbgBreakpoints b')).toBeNull(); // names are text, never markup
    kids.graph.pythonSets('debug', { live: false, text: 'no session', ok: true });
    expect((el.querySelector('button.jp-Kernelcore-breakHere') as HTMLButtonElement).disabled).toBe(true);
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });
});
