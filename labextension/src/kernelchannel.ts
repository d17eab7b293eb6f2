/**
 * One comm to the active notebook's kernel, as the sidebar models (debugger, training health) use it: it
 * follows a kernel (or none), opens the comm on its target, knows kernel restarts and kernels that have not
 * imported kernelcore_widgets (the comm closes at once), and answers every request it sent exactly once: with
 * the reply its owner settles, or with a failure when the comm closes or the request's timeout passes.
 */
import type { ConnectionStatus } from './tokens';

/** The part of a comm we use (@jupyterlab/services Kernel.IComm). */
export interface CommLike {
  open(data?: any): unknown;
  send(data: any): unknown;
  close(data?: any): unknown;
  onMsg: (msg: { content: { data: any } }) => void;
  onClose: (msg: unknown) => void;
  readonly isDisposed?: boolean;
  /** Forget the comm without a comm message to the kernel (one never opened; Lab may still tell the kernel
   * to delete the comm's subshell). */
  dispose?(): void;
  /** Settles once the comm's kernel subshell started (JupyterLab sends a comm's messages over one where the
   * kernel has subshells); never where the kernel has none or comms over subshells are turned off. */
  readonly subshellStarted?: Promise<void>;
  /** JupyterLab's "comms over subshells" setting for this comm ('disabled', 'perComm', 'perCommTarget'). */
  readonly commsOverSubshells?: string;
}

/** The part of a kernel connection we use (@jupyterlab/services Kernel.IKernelConnection). */
export interface KernelLike {
  readonly id?: string;
  readonly status?: string;
  createComm(targetName: string): CommLike;
  /** Settles with the kernel's info, after which `supportsSubshells` is known. */
  readonly info?: Promise<unknown>;
  readonly supportsSubshells?: boolean;
  statusChanged?: { connect(fn: (sender: unknown, status: string) => void): unknown; disconnect(fn: any): unknown };
}

/** What the model that owns a channel does with it. */
export interface ChannelOwner<R> {
  /** Data the kernel sent on the comm (replies included: the owner settles them). */
  message(data: unknown): void;
  /** What the kernel had sent is gone (another kernel, a restart, the comm closed). */
  forget(): void;
  /** The channel's status changed. */
  changed(): void;
  /** The answer of a request still waiting when the comm closes. */
  failure(id: number, error: string): R;
}

/** What a request gets when no reply comes in time. */
export interface Timeout<R> {
  ms: number;
  reply: R;
}

/** The status sentences that depend on what the model's kernel side offers. */
export interface OwnStatusText {
  'no-target': string;
  restarted: string;
  connected: string;
}

/** The sentence for the status line: the first three are worded the same for every channel. */
export function statusSentence(status: ConnectionStatus, own: OwnStatusText): string {
  switch (status) {
    case 'no-notebook':
      return 'no active notebook';
    case 'no-kernel':
      return 'the notebook has no running kernel';
    case 'connecting':
      return 'connecting to the kernel\u2026';
    default:
      return own[status];
  }
}

/** How long an opening waits for the comm's subshell before it goes to the main shell anyway. */
export const SUBSHELL_WAIT_MS = 5_000;

/** A comm opened on its subshell is answered at once, a cell running or not: one still unanswered this long
 * after was lost (a subshell Lab deleted meanwhile), and a reconnect opens another. */
export const LOST_OPENING_MS = 15_000;

/** Where the channel's comm is opened: on the main shell, in order with the cells (the opening waits for a
 * running cell), or `beside` them, on the comm's subshell where the kernel has subshells (the kernel side's
 * opener then runs on the subshell's thread, while a cell may run). */
export type OpenOn = 'main' | 'beside';

interface Pending<R> {
  resolve: (r: R) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class KernelChannel<R> {
  private _status: ConnectionStatus = 'no-notebook';
  private _kernel: KernelLike | null = null;
  private _comm: CommLike | null = null;
  private _unopened: CommLike | null = null; // the comm while its opening waits for its subshell
  private _besideSince: number | null = null; // when the comm's opening went to its subshell
  private _next = 1;
  private _pending = new Map<number, Pending<R>>();
  private _onStatus = (_: unknown, status: string) => this._kernelStatus(status);

  constructor(
    private readonly _target: string,
    private readonly _owner: ChannelOwner<R>,
    private readonly _openOn: OpenOn = 'main'
  ) {}

  get status(): ConnectionStatus {
    return this._status;
  }

  /** The comm is open and the kernel side has answered on it. */
  get connected(): boolean {
    return !!this._comm && this._status === 'connected';
  }

  /** The kernel answered: the owner emits the change with what the answer brought. */
  markConnected(): void {
    this._status = 'connected';
  }

  /** A fresh request id (ids are never reused, answered or not). */
  nextId(): number {
    return this._next++;
  }

  /** Follow another kernel (or none). */
  setKernel(kernel: KernelLike | null, hasNotebook = true): void {
    if (kernel === this._kernel && this._comm) {
      return;
    }
    this._closeComm(true);
    this._kernel?.statusChanged?.disconnect(this._onStatus);
    this._kernel = kernel;
    this._owner.forget();
    if (!kernel) {
      this._set(hasNotebook ? 'no-kernel' : 'no-notebook');
      return;
    }
    kernel.statusChanged?.connect(this._onStatus);
    this._open();
  }

  /** Open the comm again where it is gone; a comm still waiting for the kernel's first answer is kept (the
   * kernel answers or closes it, in order, after the cells queued before it) unless its opening was lost. */
  reconnect(): void {
    if (!this._kernel) {
      return;
    }
    const lost = this._status === 'connecting' && this._besideSince !== null &&
      Date.now() - this._besideSince >= LOST_OPENING_MS;
    if (lost) {
      this._closeComm();
    }
    if (!this._comm) {
      this._open();
    }
  }

  /**
   * Send `message` for request `id`; `resolve` gets the reply settled for it, or a failure when the comm
   * closes, or `timeout.reply` once `timeout.ms` passed (no timeout: it waits as long as the comm lives).
   * The caller checks `connected` first.
   */
  send(id: number, message: unknown, resolve: (r: R) => void, timeout?: Timeout<R>): void {
    const timer = timeout
      ? setTimeout(() => {
          this._pending.delete(id);
          resolve(timeout.reply);
        }, timeout.ms)
      : undefined;
    this._pending.set(id, { resolve, timer });
    this._comm?.send(message);
  }

  /** Answer request `id` with `reply` (a reply whose request already got its answer is dropped). */
  settle(id: number, reply: R): void {
    const p = this._pending.get(id);
    if (p) {
      clearTimeout(p.timer);
      this._pending.delete(id);
      p.resolve(reply);
    }
  }

  // -- internals ------------------------------------------------------------------------------------------
  private _open(): void {
    const kernel = this._kernel;
    if (!kernel) {
      return;
    }
    let comm: CommLike;
    try {
      comm = kernel.createComm(this._target);
    } catch {
      this._set('no-target');
      return;
    }
    this._comm = comm;
    this._set('connecting');
    comm.onMsg = msg => this._owner.message(msg?.content?.data);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this._failPending('the comm closed');
        if (this._status !== 'restarted') {
          this._owner.forget();
          this._set('no-target');
        }
      }
    };
    this._besideSince = null;
    const subshell = comm.subshellStarted;
    if (this._openOn === 'main' || !subshell || !kernel.info || comm.commsOverSubshells === 'disabled') {
      comm.open({ version: 1 });
      return;
    }
    // The comm sends on its subshell once that started (JupyterLab starts it asynchronously): opened at once,
    // the opening would go to the main shell and wait behind a running cell.
    this._unopened = comm;
    void subshellReady(kernel, subshell).then(() => {
      if (this._unopened !== comm) {
        return; // left meanwhile
      }
      this._unopened = null;
      try {
        if (comm.isDisposed) {
          throw new Error('gone with its kernel connection');
        }
        comm.open({ version: 1 });
        this._besideSince = Date.now();
      } catch {
        if (this._comm === comm) {
          this._comm = null;
          this._set('no-target');
        }
      }
    });
  }

  /** Close the comm; `kernelStays`: its kernel lives on (another kernel is followed). */
  private _closeComm(kernelStays = false): void {
    const comm = this._comm;
    const unanswered = kernelStays && this._status === 'connecting';
    this._comm = null;
    this._besideSince = null;
    this._failPending('the comm closed');
    if (comm && comm === this._unopened) {
      this._unopened = null; // the kernel never heard of it: nothing to tell it
      if (!comm.isDisposed) {
        comm.dispose?.();
      }
      return;
    }
    if (!comm || comm.isDisposed) {
      return;
    }
    if (unanswered) {
      // The kernel has not seen the comm's opening yet: one without the target closes it (a close we sent
      // first would leave the kernel's close to a comm Lab no longer knows, and Lab reports that as an error);
      // one with the target answers, and the comm is closed then.
      comm.onClose = () => undefined;
      comm.onMsg = () => closeQuietly(comm);
      return;
    }
    closeQuietly(comm);
  }

  private _failPending(error: string): void {
    this._pending.forEach(({ resolve, timer }, id) => {
      clearTimeout(timer);
      resolve(this._owner.failure(id, error));
    });
    this._pending.clear();
  }

  private _kernelStatus(status: string): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._closeComm();
      this._owner.forget();
      this._set('restarted');
    }
  }

  private _set(status: ConnectionStatus): void {
    this._status = status;
    this._owner.changed();
  }
}

function closeQuietly(comm: CommLike): void {
  if (!comm.isDisposed) {
    try {
      comm.close();
    } catch {
      // already gone with its kernel
    }
  }
}

/** Settles once `subshell` started, at once where the kernel has no subshells (or its info failed), and after
 * SUBSHELL_WAIT_MS at most. */
async function subshellReady(kernel: KernelLike, subshell: Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<void>(resolve => (timer = setTimeout(resolve, SUBSHELL_WAIT_MS)));
  try {
    await Promise.race([kernel.info, waited]);
    if (kernel.supportsSubshells) {
      await Promise.race([subshell, waited]);
    }
  } catch {
    // no info, or the subshell did not start: the main shell
  } finally {
    clearTimeout(timer);
  }
}
