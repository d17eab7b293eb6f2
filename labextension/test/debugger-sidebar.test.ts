import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DebuggerModel, KernelLike } from '../src/debugmodel';
import { COMM_TARGET, ServerMessage, StateMessage } from '../src/protocol';
import { MOVES } from '../src/protocol';
import { formatShortcut, isMac, KernelcoreSidebar } from '../src/sidebar';
import { texts } from './fake-model';
import { FakeComm } from './fake-comm';

// Real messages from the kernel side (tests/test_debug_comm.py writes and checks this file).
const MESSAGES: ServerMessage[] = JSON.parse(readFileSync(resolve(__dirname, 'debug-messages.json'), 'utf8'));
const STATES = MESSAGES.filter((m): m is StateMessage => m.type === 'state');

afterEach(() => {
  document.body.textContent = '';
});

class FakeKernel implements KernelLike {
  comms: FakeComm[] = [];
  private _status: Array<(s: unknown, status: string) => void> = [];
  statusChanged = {
    connect: (fn: (s: unknown, status: string) => void) => this._status.push(fn),
    disconnect: (fn: any) => (this._status = this._status.filter(f => f !== fn))
  };
  createComm(target: string): FakeComm {
    const c = new FakeComm(target);
    this.comms.push(c);
    return c;
  }
  setStatus(status: string): void {
    this._status.forEach(f => f(this, status));
  }
  get comm(): FakeComm {
    return this.comms[this.comms.length - 1];
  }
}

function connected() {
  const model = new DebuggerModel();
  const kernel = new FakeKernel();
  model.setKernel(kernel);
  kernel.comm.deliver(STATES[0]);
  return { model, kernel };
}

describe('debugger model (the comm)', () => {
  it('opens the kernelcore.debugger comm and follows the state the kernel pushes', () => {
    const { model, kernel } = connected();
    expect(kernel.comm.target).toBe(COMM_TARGET);
    expect(kernel.comm.opened).toBe(true);
    expect(model.status).toBe('connected');
    expect(model.session!.position[0].op_type).toBe('recurrent');
  });

  it('sends typed requests and resolves them with the matching reply', async () => {
    const { model, kernel } = connected();
    const p = model.request('step');
    const req = kernel.comm.sent[0];
    expect(req).toMatchObject({ type: 'request', command: 'step', args: {} });
    kernel.comm.deliver({ type: 'reply', id: req.id + 100, command: 'step', ok: true, error: null, result: null }); // not ours
    kernel.comm.deliver({ type: 'reply', id: req.id, command: 'step', ok: false, error: 'nope', result: null });
    expect(await p).toMatchObject({ ok: false, error: 'nope' });
    kernel.comm.deliver({ junk: true }); // ignored
    expect(model.status).toBe('connected');
  });

  it('says when the kernel has no comm target, and when it restarted', async () => {
    const model = new DebuggerModel();
    const kernel = new FakeKernel();
    model.setKernel(kernel);
    kernel.comm.onClose({});
    expect(model.status).toBe('no-target');
    expect(model.statusText).toContain('import kernelcore_widgets');
    model.reconnect();
    kernel.comm.deliver(STATES[0]);
    expect(model.status).toBe('connected');
    const pending = model.request('cont');
    kernel.setStatus('restarting');
    expect(model.status).toBe('restarted');
    expect(model.session).toBeNull();
    expect(model.statusText).toBe('kernel restarted; re-run the cell that starts the debug session');
    expect((await pending).ok).toBe(false);
    expect((await model.request('step')).error).toContain('kernel restarted');
    model.setKernel(null, true);
    expect(model.status).toBe('no-kernel');
  });
});

describe('debugger sidebar', () => {
  function sidebar() {
    const { model, kernel } = connected();
    const sb = new KernelcoreSidebar(model);
    document.body.appendChild(sb.node);
    return { model, kernel, sb };
  }

  it('shows the callstack, variables and breakpoints of the real state', () => {
    const { kernel, sb } = sidebar();
    const last = STATES[STATES.length - 1];
    kernel.comm.deliver(last);
    const s = last.state.session!;
    const frames = [...sb.node.querySelectorAll('.jp-Kernelcore-frame')].map(e => e.textContent);
    expect(frames).toEqual(s.callstack.map(f => f.label));
    expect(sb.node.querySelector('.jp-Kernelcore-dbgPosition')!.textContent).toContain(s.position_text);
    const scopes = sb.node.querySelectorAll('.jp-Kernelcore-scopeVars');
    expect(scopes.length).toBe(s.variables.length);
    const shown = texts(sb.node);
    expect(shown.some(t => t.includes(s.breakpoints[0].text))).toBe(true);
    expect(sb.node.querySelectorAll('.jp-Kernelcore-hit').length).toBe(s.hits.length);
  });

  it('filters the Variables list by part of a name, across re-renders', () => {
    const { kernel, sb } = sidebar();
    const last = STATES[STATES.length - 1];
    kernel.comm.deliver(last);
    const all = last.state.session!.variables.flatMap(sc => sc.vars.map(v => v.name));
    const name = all.find(n => all.filter(m => m.toLowerCase().includes(n.toLowerCase())).length < all.length)!;
    const want = all.filter(n => n.toLowerCase().includes(name.toLowerCase()));
    const visible = () =>
      [...sb.node.querySelectorAll<HTMLElement>('.jp-Kernelcore-var')]
        .filter(r => !r.classList.contains('jp-Kernelcore-hidden') && !r.closest('details')!.classList.contains('jp-Kernelcore-hidden'))
        .map(r => r.dataset.name);
    expect(visible().length).toBe(all.length);
    const filter = sb.node.querySelector('input.jp-Kernelcore-varFilter') as HTMLInputElement;
    filter.value = name.toUpperCase();
    filter.dispatchEvent(new Event('input'));
    expect(visible().sort()).toEqual([...want].sort());
    expect(want.length).toBeLessThan(all.length);
    kernel.comm.deliver(last); // a new state keeps the filter
    expect(visible().sort()).toEqual([...want].sort());
    filter.value = '';
    filter.dispatchEvent(new Event('input'));
    expect(visible().length).toBe(all.length);
  });

  it('every control sends its command; a variable click asks for provenance, whose links move the cursor', async () => {
    const { kernel, sb } = sidebar();
    for (const { name: cmd } of MOVES) {
      sb.buttons.get(cmd)!.click();
      const sent = kernel.comm.sent[kernel.comm.sent.length - 1];
      kernel.comm.deliver({ type: 'reply', id: sent.id, command: sent.command, ok: true, error: null, result: null }); // one move at a time
      await Promise.resolve();
    }
    expect(kernel.comm.sent.map(m => m.command)).toEqual(MOVES.map(m => m.name));
    const reply = MESSAGES.find(m => m.type === 'reply' && m.command === 'provenance')!;
    (sb.node.querySelector('.jp-Kernelcore-var') as HTMLElement).click();
    const req = kernel.comm.sent[kernel.comm.sent.length - 1];
    expect(req.command).toBe('provenance');
    kernel.comm.deliver({ ...reply, id: req.id });
    await Promise.resolve();
    await Promise.resolve();
    const links = sb.node.querySelectorAll('.jp-Kernelcore-originLink');
    expect(links.length).toBeGreaterThan(0);
    (links[0] as HTMLElement).click();
    expect(kernel.comm.sent[kernel.comm.sent.length - 1]).toMatchObject({ command: 'goto_event' });
  });

  async function showProvenance(kernel: FakeKernel, sb: KernelcoreSidebar) {
    const reply = MESSAGES.find(m => m.type === 'reply' && m.command === 'provenance')!;
    (sb.node.querySelector('.jp-Kernelcore-var') as HTMLElement).click();
    const req = kernel.comm.sent[kernel.comm.sent.length - 1];
    kernel.comm.deliver({ ...reply, id: req.id });
    await Promise.resolve();
    await Promise.resolve();
    return sb.node.querySelectorAll('.jp-Kernelcore-provenance .jp-Kernelcore-originLink').length;
  }
  const provenanceRows = (sb: KernelcoreSidebar) => sb.node.querySelectorAll('.jp-Kernelcore-provenance > *').length;

  it('drops the provenance chain when its session goes: restart, another kernel, another session', async () => {
    const { model, kernel, sb } = sidebar();
    expect(await showProvenance(kernel, sb)).toBeGreaterThan(0);
    kernel.comm.deliver(STATES[STATES.length - 1]); // the same session moves on: its chain stays
    expect(provenanceRows(sb)).toBeGreaterThan(0);
    // a restart, then a new session that happens to reuse the old id: no old event numbers survive
    kernel.setStatus('restarting');
    expect(provenanceRows(sb)).toBe(0);
    model.reconnect();
    kernel.comm.deliver(STATES[0]);
    expect(provenanceRows(sb)).toBe(0);
    // another session in the same kernel
    expect(await showProvenance(kernel, sb)).toBeGreaterThan(0);
    const other = structuredClone(STATES[0]);
    other.state.session!.id += 1;
    kernel.comm.deliver(other);
    expect(provenanceRows(sb)).toBe(0);
    // another notebook's kernel
    expect(await showProvenance(kernel, sb)).toBeGreaterThan(0);
    const second = new FakeKernel();
    model.setKernel(second);
    second.comm.deliver(STATES[0]);
    expect(provenanceRows(sb)).toBe(0);
  });

  it('does not show a provenance reply that arrives after its session was replaced', async () => {
    const { kernel, sb } = sidebar();
    const reply = MESSAGES.find(m => m.type === 'reply' && m.command === 'provenance')!;
    (sb.node.querySelector('.jp-Kernelcore-var') as HTMLElement).click();
    const req = kernel.comm.sent[kernel.comm.sent.length - 1];
    const other = structuredClone(STATES[0]);
    other.state.session!.id += 1;
    kernel.comm.deliver(other); // a new session starts while the chain is on its way
    kernel.comm.deliver({ ...reply, id: req.id });
    await Promise.resolve();
    await Promise.resolve();
    expect(provenanceRows(sb)).toBe(0);
  });

  it('names shortcuts in the platform\'s words, never Lumino\'s "Accel"', () => {
    expect(formatShortcut('Accel Shift F11', false)).toBe('Ctrl+Shift+F11');
    expect(formatShortcut('Alt Shift F9', false)).toBe('Alt+Shift+F9');
    expect(formatShortcut('Accel Shift F11', true)).toBe('\u2318\u21e7F11');
    expect(formatShortcut('Alt Shift F9', true)).toBe('\u2325\u21e7F9');
    expect(isMac({ platform: 'MacIntel' })).toBe(true);
    expect(isMac({ platform: 'Linux x86_64', userAgent: 'X11; Linux' })).toBe(false);
    const { sb } = sidebar();
    const titles = [...sb.buttons.values()].map(b => b.title);
    expect(titles.length).toBe(MOVES.length);
    titles.forEach(t => expect(t).not.toContain('Accel'));
    expect(sb.buttons.get('step')!.title).toMatch(/\((Ctrl\+Shift\+F11|\u2318\u21e7F11)\)$/);
  });

  it('keeps the focus inside itself after a click on plain text, so its key bindings still match', () => {
    const { sb } = sidebar();
    const title = sb.node.querySelector('.jp-Kernelcore-sidebarTitle') as HTMLElement;
    // a click focuses the nearest focusable ancestor of what was clicked
    const target = title.closest('[tabindex]') as HTMLElement | null;
    expect(target).toBe(sb.node);
    target!.focus();
    expect(document.activeElement).toBe(sb.node);
    expect(document.activeElement!.closest('.jp-Kernelcore-sidebar')).toBe(sb.node);
  });

  it('renders a provenance DAG with each write once: a shared input is referred to, a cut is said', async () => {
    const { kernel, sb } = sidebar();
    const node = (id: number, name: string, inputs: number[], cut: null | 'depth' | 'nodes' = null) => ({
      id, name, kind: 'op' as const, event: 10 + id, block: 0, op: id, op_type: 'elementwise_add', timestep: null,
      scope: 1, shape: [2], note: '', inputs, cut
    });
    // d = add(b, c); b = add(a, a); c = add(a, x); a's inputs were cut by the depth asked
    const dag = { root: 0, nodes: [node(0, 'd', [1, 2]), node(1, 'b', [3]), node(3, 'a', [], 'depth'), node(2, 'c', [3, 4]), node(4, 'x', [])], truncated: true, cut: [3], limits: { depth: 2, nodes: 500 } };
    (sb.node.querySelector('.jp-Kernelcore-var') as HTMLElement).click();
    const req = kernel.comm.sent[kernel.comm.sent.length - 1];
    kernel.comm.deliver({ type: 'reply', id: req.id, command: 'provenance', ok: true, error: null, result: dag });
    await Promise.resolve();
    await Promise.resolve();
    const rows = [...sb.node.querySelectorAll('.jp-Kernelcore-origin')] as HTMLElement[];
    expect(rows.map(r => r.dataset.id)).toEqual(['0', '1', '3', '2', '3', '4']);
    const full = rows.filter(r => r.dataset.id === '3' && !r.classList.contains('jp-Kernelcore-originRef'));
    expect(full.length).toBe(1);
    const ref = sb.node.querySelector('.jp-Kernelcore-originRef')!;
    expect(ref.textContent).toBe('a \u2192 see #3');
    expect(sb.node.querySelector('.jp-Kernelcore-originCut')!.textContent).toContain('depth 2');
  });

  it('shows an error reply to break_add, watch_add and provenance', async () => {
    const { kernel, sb } = sidebar();
    for (const command of ['break_add', 'watch_add', 'provenance'] as const) {
      void sb.run(command, { kind: 'write', var: 'h', name: 'h' });
      const req = kernel.comm.sent[kernel.comm.sent.length - 1];
      const error = `the program has no variable 'h'; did you mean 'h0'? (${command})`;
      kernel.comm.deliver({ type: 'reply', id: req.id, command, ok: false, error, result: null });
      await Promise.resolve();
      await Promise.resolve();
      const reply = sb.node.querySelector('.jp-Kernelcore-reply')!;
      expect(reply.textContent).toBe(error);
      expect(reply.classList.contains('jp-Kernelcore-error')).toBe(true);
    }
  });

  it('adds, toggles and removes breakpoints and watches', () => {
    const { kernel, sb } = sidebar();
    (sb.node.querySelector('.jp-Kernelcore-addOpType') as HTMLElement).click();
    expect(kernel.comm.sent.pop()).toMatchObject({ command: 'break_add', args: { kind: 'op_type' } });
    (sb.node.querySelector('.jp-Kernelcore-bpVar') as HTMLInputElement).value = 'h';
    (sb.node.querySelector('.jp-Kernelcore-addWrite') as HTMLElement).click();
    expect(kernel.comm.sent.pop()).toMatchObject({ command: 'break_add', args: { kind: 'write', var: 'h' } });
    (sb.node.querySelector('.jp-Kernelcore-watchCond') as HTMLSelectElement).value = 'overflow';
    (sb.node.querySelector('.jp-Kernelcore-watchHi') as HTMLInputElement).value = '1e4';
    (sb.node.querySelector('.jp-Kernelcore-addWatch') as HTMLElement).click();
    expect(kernel.comm.sent.pop()).toMatchObject({ command: 'watch_add', args: { var: 'h', cond: 'overflow', hi: 1e4, lo: null } });
    kernel.comm.deliver(STATES[STATES.length - 1]);
    const row = sb.node.querySelector('.jp-Kernelcore-bp') as HTMLElement;
    const box = row.querySelector('input') as HTMLInputElement;
    box.checked = false;
    box.dispatchEvent(new Event('change'));
    expect(kernel.comm.sent.pop()).toMatchObject({ command: 'break_enable', args: { enabled: false } });
    (row.querySelector('.jp-Kernelcore-bpRemove') as HTMLElement).click();
    expect(kernel.comm.sent.pop()).toMatchObject({ command: 'break_remove', args: { id: Number(row.dataset.id) } });
  });

  it('shows the restart state', () => {
    const { kernel, sb } = sidebar();
    kernel.setStatus('restarting');
    expect(sb.node.querySelector('.jp-Kernelcore-dbgStatus')!.textContent).toBe('kernel restarted; re-run the cell that starts the debug session');
    expect(sb.buttons.get('step')!.disabled).toBe(true);
  });
});
