/** A fake kernel comm for the sidebar's DebuggerModel: records what the model sends and delivers the kernel's
 * messages and replies. */
import { CommLike } from '../src/kernelchannel';

export class FakeComm implements CommLike {
  sent: any[] = [];
  opened = false;
  closed = false;
  onMsg: (msg: { content: { data: any } }) => void = () => undefined;
  onClose: (msg: unknown) => void = () => undefined;
  constructor(readonly target = '') {}
  open(): void {
    this.opened = true;
  }
  send(data: any): void {
    this.sent.push(data);
  }
  close(): void {
    this.closed = true;
  }
  deliver(data: unknown): void {
    this.onMsg({ content: { data } });
  }
  /** The kernel's reply, without a result, to request `id` (a move's). */
  answer(id: number, ok = true, error: string | null = null): void {
    const req = this.sent.find(r => r.id === id);
    this.deliver({ type: 'reply', id, command: req.command, ok, error, result: null });
  }
}

/** The kernel's reply to the last request `comm` sent. */
export function reply(comm: FakeComm, result: unknown, ok = true, error: string | null = null): void {
  const req = comm.sent[comm.sent.length - 1];
  comm.deliver({ type: 'reply', id: req.id, command: req.command, ok, error, result });
}

/** Let the promises already settled run their callbacks. */
export const tick = () => new Promise(r => setTimeout(r, 0));
