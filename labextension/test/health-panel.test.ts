import { afterEach, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { HEALTH_TARGET, HealthModel, HealthReply } from '../src/healthmodel';
import { HealthPanel } from '../src/healthpanel';
import { FakeComm, FakeKernel, tick } from './fake-comm';

// Real messages from the kernel side (tests/test_health_panel.py writes and checks this file): an empty
// kernel's state, a state with two recorders (the one shown named with markup and a terminal escape, stopped
// at a NaN), and a select's reply.
const MESSAGES: HealthReply[] = JSON.parse(readFileSync(resolve(__dirname, 'health-messages.json'), 'utf8'));
const [EMPTY, TWO, SELECTED] = MESSAGES;

afterEach(() => {
  document.body.textContent = '';
  vi.useRealTimers();
});

function push(comm: FakeComm, msg: HealthReply): void {
  comm.deliver({ ...msg, req: null });
}

function connected() {
  const model = new HealthModel();
  const kernel = new FakeKernel();
  model.setKernel(kernel);
  const panel = new HealthPanel(model);
  document.body.appendChild(panel.node);
  return { model, kernel, panel, comm: kernel.comm };
}

describe('health model (the comm)', () => {
  it('opens the kernelcore.health comm and keeps the state the kernel pushes', () => {
    const model = new HealthModel();
    const kernel = new FakeKernel();
    model.setKernel(kernel);
    expect(kernel.comm.target).toBe(HEALTH_TARGET);
    expect(model.status).toBe('connecting');
    push(kernel.comm, TWO);
    expect(model.status).toBe('connected');
    expect(model.state!.recorders.length).toBe(2);
  });

  it('answers every request exactly once: with its reply, or failed when the comm closes or the kernel is silent', async () => {
    vi.useFakeTimers();
    const model = new HealthModel();
    const kernel = new FakeKernel();
    model.setKernel(kernel);
    push(kernel.comm, EMPTY);
    const answered: HealthReply[] = [];
    const first = model.show({ stat: 'max' }).then(r => answered.push(r));
    const req = kernel.comm.sent[0].req;
    kernel.comm.deliver({ ...TWO, req });
    kernel.comm.deliver({ ...TWO, req }); // a second reply to the same request changes nothing
    await first;
    const second = model.show({}).then(r => answered.push(r));
    vi.advanceTimersByTime(60_001);
    await second;
    const third = model.select(0, 1, 2).then(r => answered.push(r));
    kernel.comm.onClose({});
    await third;
    expect(answered.map(r => r.ok)).toEqual([true, false, false]);
    expect(answered[1].error).toContain('did not answer');
    expect(answered[2].error).toContain('closed');
    expect(model.status).toBe('no-target');
  });
});

describe('health panel', () => {
  it('says how to start recording when the kernel has no recorder', () => {
    const { panel, comm } = connected();
    push(comm, EMPTY);
    expect(panel.node.querySelector('.jp-Kernelcore-hpHint')!.textContent).toContain('with kc.record(main, scope) as rec:');
    expect(panel.node.querySelectorAll('.jp-Kernelcore-hvRow').length).toBe(0);
    expect(comm.sent[0]).toMatchObject({ type: 'state' }); // connected: it asked for its view once
    expect(comm.sent.length).toBe(1);
  });

  it('asks for the state once the kernel greets it (the greeting carries none)', () => {
    const { panel, model, comm } = connected();
    comm.deliver({ req: null, ok: true, error: null, result: null });
    expect(model.status).toBe('connected');
    expect(model.state).toBeNull();
    expect(comm.sent).toEqual([expect.objectContaining({ type: 'state', points: expect.any(Number) })]);
    push(comm, EMPTY);
    expect(comm.sent.length).toBe(1); // asked once, not at every push
    expect(panel.node.querySelector('.jp-Kernelcore-hpHint')!.textContent).toContain('kc.record');
  });

  it('draws the loss, the gradient norms and the ops, the first bad iteration marked, names as text', () => {
    const { panel, comm } = connected();
    push(comm, TWO);
    const n = panel.node;
    const fb = TWO.result as any;
    const first = fb.payload.overview.first_bad;
    expect(n.querySelector('.jp-Kernelcore-hvFirstBadText')!.textContent).toContain(`iteration ${first.iteration}`);
    expect(n.querySelector('.jp-Kernelcore-hvLossCurve')).not.toBeNull();
    expect(n.querySelectorAll('.jp-Kernelcore-hvGradCurve').length).toBe(fb.payload.grads.length);
    const bad = n.querySelector('.jp-Kernelcore-hvBadRow')!;
    expect(bad.getAttribute('data-op')).toBe(first.id);
    const line = bad.querySelector('.jp-Kernelcore-sparkFirstBad')!;
    expect(line.getAttribute('data-iteration')).toBe(String(first.iteration));
    // the recorder named with markup is an option's text, not an element
    const pick = n.querySelector('.jp-Kernelcore-hpRecorder') as HTMLSelectElement;
    expect(pick.value).toBe(fb.recorder);
    expect([...pick.options].map(o => o.value)).toEqual(fb.recorders.map((r: any) => r.name));
    expect(n.querySelector('img')).toBeNull();
    expect(pick.options[0].textContent).toContain('<img src=x onerror=alert(1)>');
  });

  it('a click on a sparkline asks for a session at that op and iteration, then shows the debugger', async () => {
    const { panel, comm } = connected();
    push(comm, TWO);
    const moved = vi.fn();
    panel.onDebuggerMoved = moved;
    const first = (TWO.result as any).payload.overview.first_bad;
    const spark = panel.node.querySelector(`.jp-Kernelcore-hvRow[data-op="${first.id}"] svg`) as SVGSVGElement;
    const iterations = (TWO.result as any).payload.overview.iterations;
    spark.getBoundingClientRect = () => ({ left: 0, top: 0, width: 200, height: 24, right: 200, bottom: 24, x: 0, y: 0, toJSON() {} }) as DOMRect;
    spark.dispatchEvent(new MouseEvent('click', { clientX: ((first.iteration + 0.5) / iterations) * 200, bubbles: true }));
    const asked = comm.sent[comm.sent.length - 1];
    expect(asked).toMatchObject({ type: 'select', block: first.block, op: first.op, iteration: first.iteration, recorder: (TWO.result as any).recorder });
    comm.deliver({ ...SELECTED, req: asked.req });
    await tick();
    expect(moved).toHaveBeenCalledTimes(1);
    expect(panel.node.querySelector('.jp-Kernelcore-hpReply')!.textContent).toContain('debugger: recorder: iteration');
    expect(panel.node.querySelector('.jp-Kernelcore-hvChosen')!.getAttribute('data-op')).toBe(first.id);
  });

  it('a failed select says why and leaves the debugger alone', async () => {
    const { panel, comm } = connected();
    push(comm, TWO);
    const moved = vi.fn();
    panel.onDebuggerMoved = moved;
    panel.debugAt(0, 0, 99);
    const asked = comm.sent[comm.sent.length - 1];
    comm.deliver({ req: asked.req, ok: false, error: 'op 0/0 wrote nothing recorded in iteration 99', result: null });
    await tick();
    expect(moved).not.toHaveBeenCalled();
    expect(panel.node.querySelector('.jp-Kernelcore-hpReply')!.textContent).toContain('wrote nothing recorded');
  });

  it('picking another recorder or statistic asks the kernel for it', () => {
    const { panel, comm } = connected();
    push(comm, TWO);
    const pick = panel.node.querySelector('.jp-Kernelcore-hpRecorder') as HTMLSelectElement;
    pick.value = 'healthy';
    pick.dispatchEvent(new Event('change'));
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ type: 'state', recorder: 'healthy', page: 0 });
    const stat = panel.node.querySelector('.jp-Kernelcore-hvStat') as HTMLSelectElement;
    stat.value = 'max';
    stat.dispatchEvent(new Event('change'));
    const asked = comm.sent[comm.sent.length - 1];
    expect(asked).toMatchObject({ type: 'state', stat: 'max' });
    expect(asked.points).toBeGreaterThanOrEqual(16);
    expect(asked.points).toBeLessThanOrEqual(500);
  });

  it('a push while the person types in the filter keeps their input', () => {
    const { panel, comm } = connected();
    push(comm, TWO);
    const filter = panel.node.querySelector('.jp-Kernelcore-hvFilter') as HTMLInputElement;
    filter.focus();
    filter.value = 'elementw';
    push(comm, TWO);
    expect(panel.node.querySelector('.jp-Kernelcore-hvFilter')).toBe(filter);
    expect(filter.value).toBe('elementw');
  });
});
