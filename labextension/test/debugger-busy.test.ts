import { afterEach, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { copyButton, copyText } from '../src/copytext';
import { DebuggerModel, KernelLike } from '../src/debugmodel';
import { ServerMessage, StateMessage } from '../src/protocol';
import { KernelcoreSidebar, valueTokens } from '../src/sidebar';
import { commandTitle, PAUSE } from '../src/shortcuts';
import { debuggerChildren, DebuggerView } from '../src/views/Debugger';
import { forest, mlp, trace } from './fixtures';
import { container, FakeModel, withChildren } from './fake-model';
import { FakeComm, tick } from './fake-comm';

// Real messages from the kernel side (tests/test_debug_comm.py writes and checks this file).
const MESSAGES: ServerMessage[] = JSON.parse(readFileSync(resolve(__dirname, 'debug-messages.json'), 'utf8'));
const STATES = MESSAGES.filter((m): m is StateMessage => m.type === 'state');

afterEach(() => {
  document.body.textContent = '';
  vi.unstubAllGlobals();
});

function connected() {
  const comm = new FakeComm();
  const kernel: KernelLike = { createComm: () => comm };
  const model = new DebuggerModel();
  model.setKernel(kernel);
  comm.deliver(STATES[0]);
  return { model, comm };
}

describe('the sidebar while a move runs', () => {
  it('says running, disables the moves and offers Pause until the move is answered', async () => {
    const { model, comm } = connected();
    const sb = new KernelcoreSidebar(model);
    document.body.appendChild(sb.node);
    expect(sb.pause.disabled).toBe(true);
    expect(model.busy).toBe(false);
    sb.buttons.get('cont')!.click();
    const cont = comm.sent[comm.sent.length - 1];
    expect(cont.command).toBe('cont');
    expect(model.busy).toBe(true);
    expect(sb.node.classList.contains('jp-Kernelcore-isBusy')).toBe(true);
    expect(sb.node.querySelector('.jp-Kernelcore-busy')!.textContent).toBe('running\u2026');
    expect([...sb.buttons.values()].every(b => b.disabled)).toBe(true);
    expect(sb.pause.disabled).toBe(false);
    // a second move is refused here, not queued behind the first in the kernel
    const refused = await model.request('step');
    expect(refused.ok).toBe(false);
    expect(refused.error).toContain('a move is running');
    expect(comm.sent.filter(r => r.command === 'step')).toEqual([]);
    sb.pause.click();
    const pause = comm.sent[comm.sent.length - 1];
    expect(pause.command).toBe('pause');
    comm.answer(pause.id);
    await tick();
    expect(model.busy).toBe(true); // the pause was asked; the move has not stopped yet
    comm.answer(cont.id);
    await tick();
    expect(model.busy).toBe(false);
    expect(sb.pause.disabled).toBe(true);
    expect(sb.buttons.get('cont')!.disabled).toBe(false);
    sb.dispose();
  });

  it('waits as long as a move runs (no timeout turns a long run into an error)', async () => {
    vi.useFakeTimers();
    try {
      const { model, comm } = connected();
      let answered = false;
      void model.request('cont').then(() => (answered = true));
      vi.advanceTimersByTime(5 * 60_000);
      await Promise.resolve();
      expect(answered).toBe(false);
      expect(model.busy).toBe(true);
      comm.answer(comm.sent[comm.sent.length - 1].id);
      await Promise.resolve();
      expect(answered).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the Debugger widget while a move runs', () => {
  async function debuggerView() {
    const kids = {
      graph: new FakeModel({ program: mlp(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [] }),
      forest: new FakeModel({ forest: forest(), opened: {} }),
      stepper: null,
      timeline: new FakeModel({ events: trace().events, filter: {}, selected_event: -1, truncated: 0 })
    };
    const own = { position: 'block 0 op #1 relu', frames: [], stop_reason: 'step', finished: false, time_travel: -1, breakpoints: [], busy: false };
    const m = withChildren(new FakeModel(own), kids);
    const v = new DebuggerView(m, container(), await debuggerChildren(m));
    await v.ready;
    return { m, v };
  }

  it("titles its Pause as the sidebar does, with Pause's key", async () => {
    const { v } = await debuggerView();
    expect(commandTitle(PAUSE, false)).toBe(`kernelcore:pause: ${PAUSE.help} (F6)`);
    expect(v.pause.title).toBe(commandTitle(PAUSE));
    expect(v.pause.title).toBe(new KernelcoreSidebar(new DebuggerModel()).pause.title);
  });

  it('is busy from the click until Python says the move stopped, and its Pause goes to Python', async () => {
    const { m, v } = await debuggerView();
    expect(v.pause.disabled).toBe(true);
    v.buttons.get('cont')!.click();
    expect(m.sent).toEqual([{ type: 'cont' }]);
    expect(v.busy).toBe(true);
    expect([...v.buttons.values()].every(b => b.disabled)).toBe(true);
    expect(v.root.querySelector('.jp-Kernelcore-status')!.textContent).toBe('running\u2026');
    v.buttons.get('step')!.click(); // disabled: nothing sent
    m.set('busy', true);
    v.pause.click();
    expect(m.sent[m.sent.length - 1]).toEqual({ type: 'pause' });
    m.set('stop_reason', 'paused');
    m.set('busy', false);
    expect(v.busy).toBe(false);
    expect(v.pause.disabled).toBe(true);
    expect(v.buttons.get('step')!.disabled).toBe(false);
    expect(v.root.querySelector('.jp-Kernelcore-status')!.textContent).toBe('paused');
    expect(m.sent.filter(x => x.type === 'step')).toEqual([]);
    v.dispose();
  });
});

describe('values in the narrow sidebar', () => {
  it('are tokens that wrap between, never inside; without a preview, the dtype and shape', () => {
    const preview = { dtype: 'float32', shape: [2, 4], place: 'CPUPlace', min: -0.5, max: 0.25, mean: 0.125, nan: 0, inf: 0, sample: [] } as any;
    expect(valueTokens({ kind: 'tensor', preview })).toEqual(['float32[2, 4]', 'min -0.5000', 'max 0.2500', 'mean 0.1250']);
    expect(valueTokens({ kind: 'tensor', dtype: 'float32', shape: [2, 4], preview: null })).toEqual(['float32[2, 4]']);
    expect(valueTokens({ kind: 'empty', preview: null })).toEqual(['empty']);
  });

  it('shows each token in its own span, the whole text as the tooltip', () => {
    const { model } = connected();
    const sb = new KernelcoreSidebar(model);
    const row = sb.node.querySelector('.jp-Kernelcore-var')!;
    const value = row.querySelector('.jp-Kernelcore-varValue') as HTMLElement;
    const tokens = [...value.querySelectorAll('.jp-Kernelcore-valueToken')].map(t => t.textContent);
    expect(tokens.length).toBeGreaterThan(0);
    expect(value.title).toBe(tokens.join('  '));
    sb.dispose();
  });
});

describe('copying a name', () => {
  it('uses the clipboard API, else a text area and the copy command', async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(window.navigator, 'clipboard', { value: { writeText }, configurable: true });
    const b = copyButton('name', () => 'static_rnn.mem_0');
    document.body.appendChild(b);
    b.click();
    await tick();
    expect(writeText).toHaveBeenCalledWith('static_rnn.mem_0');
    expect(b.dataset.copied).toBe('copied');
    // refused (no secure context): the fallback copies the selected text area's text
    Object.defineProperty(window.navigator, 'clipboard', { value: { writeText: () => Promise.reject(new Error('denied')) }, configurable: true });
    let copied = '';
    (document as any).execCommand = (cmd: string) => {
      copied = cmd === 'copy' ? (document.activeElement as HTMLTextAreaElement | null)?.value ?? (document.querySelector('textarea') as HTMLTextAreaElement).value : '';
      return cmd === 'copy';
    };
    expect(await copyText('h0')).toBe('copied');
    expect(copied).toBe('h0');
    expect(document.querySelector('textarea')).toBeNull();
    delete (document as any).execCommand;
    Object.defineProperty(window.navigator, 'clipboard', { value: undefined, configurable: true });
  });

  it('is offered on each variable of the sidebar, without asking where the value came from', async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(window.navigator, 'clipboard', { value: { writeText }, configurable: true });
    const { model, comm } = connected();
    const sb = new KernelcoreSidebar(model);
    const row = sb.node.querySelector('.jp-Kernelcore-var') as HTMLElement;
    const n = comm.sent.length;
    (row.querySelector('.jp-Kernelcore-copy') as HTMLButtonElement).click();
    await tick();
    expect(writeText).toHaveBeenCalledWith(row.dataset.name);
    expect(comm.sent.length).toBe(n); // not also a provenance click
    row.dispatchEvent(new MouseEvent('contextmenu', { bubbles: true, clientX: 5, clientY: 5 }));
    const items = [...document.querySelectorAll('.jp-Kernelcore-copyMenu button')].map(b => b.textContent);
    expect(items).toEqual(['Copy name', 'Copy value']);
    (document.querySelectorAll('.jp-Kernelcore-copyMenu button')[1] as HTMLButtonElement).click();
    await tick();
    expect(writeText).toHaveBeenLastCalledWith((row.querySelector('.jp-Kernelcore-varValue') as HTMLElement).title);
    Object.defineProperty(window.navigator, 'clipboard', { value: undefined, configurable: true });
    sb.dispose();
  });
});
