import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DebuggerModel, KernelLike } from '../src/debugmodel';
import { ServerMessage, StateMessage } from '../src/protocol';
import { TensorPanel } from '../src/tensorpanel';
import { TensorViewerView } from '../src/views/TensorViewer';
import { container, FakeModel } from './fake-model';
import { FakeComm, reply, tick } from './fake-comm';

// "Send to notebook" never replaces a name unasked: a taken name comes back with a free one proposed, and only
// the Overwrite button (the person's confirmation) sends `overwrite: true`.
const MESSAGES: ServerMessage[] = JSON.parse(readFileSync(resolve(__dirname, 'debug-messages.json'), 'utf8'));
const STATE = MESSAGES.find((m): m is StateMessage => m.type === 'state')!;

afterEach(() => {
  document.body.textContent = '';
});

function overwriteButton(el: Element): HTMLButtonElement {
  return el.querySelector('button.jp-Kernelcore-tvOverwrite') as HTMLButtonElement;
}

describe('send to notebook over a defined name', () => {
  it('the widget view offers the proposed name and sends overwrite only from its button', () => {
    const el = container();
    const m = new FakeModel({ name: 'h', shape: [2, 2], axes: [0, 1], index: [0, 0], slice: {}, health: {}, status: '', name_taken: {} });
    new TensorViewerView(m, el);
    const box = el.querySelector('input.jp-Kernelcore-tvSendName') as HTMLInputElement;
    (el.querySelector('button.jp-Kernelcore-tvSendValue') as HTMLButtonElement).click();
    expect(m.sent[m.sent.length - 1]).toEqual({ type: 'send', name: 'value', what: 'value' });
    expect(overwriteButton(el)).toBeNull();
    m.set('name_taken', { taken: 'value', proposed: 'value_2', what: 'value' });
    expect(box.value).toBe('value_2');
    expect(el.textContent).toContain("'value' is already defined in the notebook");
    overwriteButton(el).click();
    expect(m.sent[m.sent.length - 1]).toEqual({ type: 'send', name: 'value', what: 'value', overwrite: true });
    m.set('name_taken', {});
    expect(overwriteButton(el)).toBeNull();
  });

  it('the sidebar panel shows the kernel\'s proposal and confirms only when asked', async () => {
    const model = new DebuggerModel();
    const comm = new FakeComm();
    const kernel: KernelLike = { createComm: () => comm } as any;
    model.setKernel(kernel);
    comm.deliver(STATE);
    const panel = new TensorPanel(model, 'h', 3);
    document.body.appendChild(panel.node);
    panel.local.send({ type: 'send', name: 'kc', what: 'slice' });
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ command: 'tensor_send', args: { target: 'kc', what: 'slice', overwrite: false } });
    reply(comm, { taken: 'kc', proposed: 'kc_2' }, false, "'kc' is already defined in the notebook");
    await tick();
    const box = panel.node.querySelector('input.jp-Kernelcore-tvSendName') as HTMLInputElement;
    expect(box.value).toBe('kc_2');
    expect(panel.local.get('status')).toContain('not sent');
    overwriteButton(panel.node).click();
    expect(comm.sent[comm.sent.length - 1]).toMatchObject({ command: 'tensor_send', args: { target: 'kc', what: 'slice', overwrite: true } });
    reply(comm, { sent: 'kc', what: 'slice', name: 'h', overwritten: true });
    await tick();
    expect(panel.local.get('status')).toBe("sent the slice to the notebook as 'kc' (replacing the old 'kc', as confirmed)");
    expect(overwriteButton(panel.node)).toBeNull();
    panel.dispose();
  });
});
