/** A fake kernel comm for the sidebar's DebuggerModel: records what the model sends and delivers the kernel's
 * messages and replies. */
import { CommLike, KernelLike } from '../src/kernelchannel';

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

type StatusListener = (sender: unknown, status: string) => void;

/** A fake kernel connection: the comms the model opened (the last one is `comm`), its status listeners, and a
 * kernel that has no comm target yet (`noTarget`). */
export class FakeKernel implements KernelLike {
  comms: FakeComm[] = [];
  listeners: StatusListener[] = [];
  noTarget = false;
  statusChanged = {
    connect: (fn: StatusListener) => this.listeners.push(fn),
    disconnect: (fn: StatusListener) => (this.listeners = this.listeners.filter(f => f !== fn))
  };
  createComm(target: string): FakeComm {
    if (this.noTarget) {
      throw new Error(`no comm target ${target}`);
    }
    const c = new FakeComm(target);
    this.comms.push(c);
    return c;
  }
  get comm(): FakeComm {
    return this.comms[this.comms.length - 1];
  }
  /** The kernel says it restarts (the models close their comm and say so). */
  restart(): void {
    this.listeners.forEach(fn => fn(this, 'restarting'));
  }
}

/** The kernel's reply to the last request `comm` sent. */
export function reply(comm: FakeComm, result: unknown, ok = true, error: string | null = null): void {
  const req = comm.sent[comm.sent.length - 1];
  comm.deliver({ type: 'reply', id: req.id, command: req.command, ok, error, result });
}

/** Let the promises already settled run their callbacks. */
export const tick = () => new Promise(r => setTimeout(r, 0));
