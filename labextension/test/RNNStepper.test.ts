import { afterEach, describe, expect, it } from 'vitest';
import RNNStepperWidget, { RNNStepperView } from '../src/views/RNNStepper';
import { HOSTILE, PREVIEW_1D } from './fixtures';
import { container, FakeModel, texts } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

function stepScope(t: number) {
  return {
    id: 10 + t,
    parent: 1,
    depth: 1,
    origin: { op: 'recurrent', block: 0, op_idx: 0, timestep: t, what: 'recurrent step' },
    kids: [],
    vars: [
      { name: 'x_t', kind: 'tensor', dtype: 'float32', shape: [3], place: 'CPUPlace', preview: PREVIEW_1D, role: 'x_t', roles: ['x_t'] },
      { name: 'h_pre', kind: 'tensor', dtype: 'float32', shape: [3], place: 'CPUPlace', preview: PREVIEW_1D, role: 'h_prev', roles: ['h_prev'] },
      { name: 'h', kind: 'tensor', dtype: 'float32', shape: [3], place: 'CPUPlace', preview: PREVIEW_1D, role: 'h_new', roles: ['h_new', 'output'] },
      { name: HOSTILE, kind: 'tensor', dtype: 'float32', shape: [3], place: 'CPUPlace', preview: null, role: null, roles: [] }
    ]
  };
}

function state(t = 1) {
  return {
    mode: 'replay',
    num_steps: 5,
    timestep: t,
    step_scope: stepScope(t),
    memory_flow: [1, 2, 3, 4].map(k => ({ t: k, from: 'h', to: 'h_pre' })),
    status: 'replaying 5 steps'
  };
}

describe('RNNStepper', () => {
  it('draws the slider, the memory strip and the step scope by role', () => {
    const el = container();
    const m = new FakeModel(state(1));
    const cleanup = RNNStepperWidget.render({ model: m, el });
    const slider = el.querySelector('input[type=range]') as HTMLInputElement;
    expect(slider.max).toBe('4');
    expect(slider.value).toBe('1');
    expect(el.querySelector('.jp-Kernelcore-stepLabel')!.textContent).toBe('t = 1 / 4');
    const boxes = [...el.querySelectorAll('.jp-Kernelcore-stepBox')].map(b => b.textContent);
    expect(boxes).toEqual(['t=0', 't=1', 't=2', 't=3', 't=4']);
    expect(el.querySelector('.jp-Kernelcore-stepBox.jp-Kernelcore-current')!.textContent).toBe('t=1');
    const flows = [...el.querySelectorAll('.jp-Kernelcore-flowNames')].map(f => f.textContent);
    expect(flows).toEqual(['h \u2192 h_pre', 'h \u2192 h_pre', 'h \u2192 h_pre', 'h \u2192 h_pre']);
    const col = (role: string) => [...el.querySelectorAll(`.jp-Kernelcore-col-${role} .jp-Kernelcore-varName`)].map(e => e.textContent);
    expect(col('x_t')).toEqual(['x_t']);
    expect(col('h_prev')).toEqual(['h_pre']);
    expect(col('h_new')).toEqual(['h']);
    expect(col('output')).toEqual(['h']);
    expect(col('other')).toEqual([HOSTILE]);
    expect(el.querySelector('img, script')).toBeNull();
    expect(el.querySelectorAll('canvas.jp-Kernelcore-sparkline').length).toBe(4);
    expect(texts(el)).toContain('replaying 5 steps');
    cleanup();
    expect(m.listenerCount()).toBe(0);
  });

  it('sends goto / prev / next and follows Python', () => {
    const el = container();
    const m = new FakeModel(state(1));
    const view = new RNNStepperView(m, el);
    (el.querySelector('.jp-Kernelcore-next') as HTMLButtonElement).click();
    (el.querySelector('.jp-Kernelcore-prev') as HTMLButtonElement).click();
    const slider = el.querySelector('input[type=range]') as HTMLInputElement;
    slider.value = '3';
    slider.dispatchEvent(new Event('input'));
    expect(el.querySelector('.jp-Kernelcore-stepLabel')!.textContent).toBe('t = 3 / 4');
    slider.dispatchEvent(new Event('change'));
    (el.querySelectorAll('.jp-Kernelcore-stepBox')[4] as HTMLElement).click();
    expect(m.sent).toEqual([{ type: 'next' }, { type: 'prev' }, { type: 'goto', t: 3 }, { type: 'goto', t: 4 }]);
    m.pythonSets('timestep', 4);
    m.pythonSets('step_scope', stepScope(4));
    expect(el.querySelector('.jp-Kernelcore-stepBox.jp-Kernelcore-current')!.textContent).toBe('t=4');
    expect((el.querySelector('.jp-Kernelcore-next') as HTMLButtonElement).disabled).toBe(true);
    expect(texts(el).some(t => t.includes('t=4'))).toBe(true);
    view.dispose();
  });

  it('windows the strip for long sequences', () => {
    const el = container();
    const view = new RNNStepperView(new FakeModel({ ...state(500), num_steps: 1000, memory_flow: [] }), el);
    expect(el.querySelectorAll('.jp-Kernelcore-stepBox').length).toBe(15);
    view.dispose();
  });

  it('shows no step before the op starts, and the initial state flowing into t=0', () => {
    const el = container();
    const m = new FakeModel({ ...state(1), timestep: -1, step_scope: {}, rnn_op: 'o0:3', memory_flow: [{ t: 0, from: 'h0', to: 'h_pre', from_t: null }] });
    const view = new RNNStepperView(m, el);
    expect(el.querySelector('.jp-Kernelcore-stepLabel')!.textContent).toBe('not started (5 steps)');
    expect(el.querySelector('.jp-Kernelcore-stepBox.jp-Kernelcore-current')).toBeNull();
    expect([...el.querySelectorAll('.jp-Kernelcore-flowNames')].map(f => f.textContent)).toEqual(['h0 \u2192 h_pre', '', '', '', '']);
    expect(texts(el)).toContain('op o0:3');
    expect(texts(el)).toContain('no step scope');
    view.dispose();
  });

  it('does something else for next when asked to (the Debugger: its step to the next timestep)', () => {
    const el = container();
    const m = new FakeModel(state(1));
    const asked: string[] = [];
    const view = new RNNStepperView(m, el, { onNext: () => asked.push('step_timestep') });
    (el.querySelector('.jp-Kernelcore-next') as HTMLButtonElement).click();
    expect(m.sent).toEqual([]);
    expect(asked).toEqual(['step_timestep']);
    view.dispose();
  });
});
