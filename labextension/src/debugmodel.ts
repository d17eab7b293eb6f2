/**
 * The debugger model: one comm (`kernelcore.debugger`) to the active notebook's kernel, typed requests and
 * the session state the kernel pushes. It knows about kernel restarts (the state says so until the comm
 * opens again) and about kernels that have not imported kernelcore_widgets (the comm closes at once).
 */
import { ISignal, Signal } from '@lumino/signaling';
import { COMM_TARGET, Command, CommandArgs, isServerMessage, MOVES, Reply, Session } from './protocol';
import { ConnectionStatus, IKernelcoreDebuggerModel } from './tokens';

/** The part of a comm we use (@jupyterlab/services Kernel.IComm). */
export interface CommLike {
  open(data?: any): unknown;
  send(data: any): unknown;
  close(data?: any): unknown;
  onMsg: (msg: { content: { data: any } }) => void;
  onClose: (msg: unknown) => void;
  readonly isDisposed?: boolean;
}

/** The part of a kernel connection we use (@jupyterlab/services Kernel.IKernelConnection). */
export interface KernelLike {
  readonly id?: string;
  readonly status?: string;
  createComm(targetName: string): CommLike;
  statusChanged?: { connect(fn: (sender: unknown, status: string) => void): unknown; disconnect(fn: any): unknown };
}

const TIMEOUT_MS = 60_000;

/** The requests that run the program (the moves, run to, run N): one at a time; Pause stops the one running. */
const RUNS = new Set<Command>([...MOVES.map(m => m.name), 'run_to', 'run_n']);

export class DebuggerModel implements IKernelcoreDebuggerModel {
  private _session: Session | null = null;
  private _status: ConnectionStatus = 'no-notebook';
  private _kernel: KernelLike | null = null;
  private _comm: CommLike | null = null;
  private _next = 1;
  /** requests of RUNS sent and not answered yet */
  private _running = 0;
  private _pending = new Map<number, { resolve: (r: Reply) => void; timer: ReturnType<typeof setTimeout> | undefined }>();
  private _changed: Signal<IKernelcoreDebuggerModel, void> = new Signal<IKernelcoreDebuggerModel, void>(this);
  private _onStatus = (_: unknown, status: string) => this._kernelStatus(status);

  get session(): Session | null {
    return this._session;
  }

  get status(): ConnectionStatus {
    return this._status;
  }

  /** A move sent to the kernel runs: the views say "running\u2026", disable the moves and offer Pause. */
  get busy(): boolean {
    return this._running > 0;
  }

  get changed(): ISignal<IKernelcoreDebuggerModel, void> {
    return this._changed;
  }

  get statusText(): string {
    switch (this._status) {
      case 'no-notebook':
        return 'no active notebook';
      case 'no-kernel':
        return 'the notebook has no running kernel';
      case 'connecting':
        return 'connecting to the kernel\u2026';
      case 'no-target':
        return 'the kernel has no kernelcore debugger yet: run `import kernelcore_widgets` (or start a session) in a cell';
      case 'restarted':
        return 'kernel restarted; re-run the cell that starts the debug session';
      case 'connected':
        return this._session ? '' : 'no debug session in this kernel: start one with kc.debug(program, feed=...)';
    }
  }

  /** Follow another kernel (or none). */
  setKernel(kernel: KernelLike | null, hasNotebook = true): void {
    if (kernel === this._kernel && this._comm) {
      return;
    }
    this._closeComm();
    this._kernel?.statusChanged?.disconnect(this._onStatus);
    this._kernel = kernel;
    this._session = null;
    if (!kernel) {
      this._set(hasNotebook ? 'no-kernel' : 'no-notebook');
      return;
    }
    kernel.statusChanged?.connect(this._onStatus);
    this._open();
  }

  reconnect(): void {
    if (this._kernel && (this._status !== 'connected' || !this._comm)) {
      this._closeComm();
      this._open();
    }
  }

  request<C extends Command>(command: C, args: CommandArgs[C] = {} as CommandArgs[C]): Promise<Reply> {
    const id = this._next++;
    const comm = this._comm;
    if (!comm || this._status !== 'connected') {
      return Promise.resolve({ type: 'reply', id, command, ok: false, error: this.statusText || 'not connected', result: null });
    }
    const runs = RUNS.has(command);
    if (runs && this.busy) {
      return Promise.resolve({ type: 'reply', id, command, ok: false, error: 'a move is running: pause it, or wait for it to stop', result: null });
    }
    if (runs) {
      this._running++;
      this._changed.emit();
    }
    return new Promise<Reply>(answer => {
      const resolve = (r: Reply) => {
        if (runs) {
          this._running = Math.max(0, this._running - 1);
          this._changed.emit();
        }
        answer(r);
      };
      // a move may run for minutes: it is answered when it stops (or failed when the comm or kernel goes)
      const timer = runs
        ? undefined
        : setTimeout(() => {
            this._pending.delete(id);
            resolve({ type: 'reply', id, command, ok: false, error: 'the kernel did not answer (busy?)', result: null });
          }, TIMEOUT_MS);
      this._pending.set(id, { resolve, timer });
      comm.send({ type: 'request', id, command, args });
    });
  }

  dispose(): void {
    this.setKernel(null, false);
    Signal.clearData(this);
  }

  // -- internals ------------------------------------------------------------------------------------------
  private _open(): void {
    const kernel = this._kernel;
    if (!kernel) {
      return;
    }
    let comm: CommLike;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch {
      this._set('no-target');
      return;
    }
    this._comm = comm;
    this._set('connecting');
    comm.onMsg = msg => this._message(msg?.content?.data);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this._failPending('the comm closed');
        if (this._status !== 'restarted') {
          this._session = null;
          this._set('no-target');
        }
      }
    };
    comm.open({ version: 1 });
  }

  private _closeComm(): void {
    const comm = this._comm;
    this._comm = null;
    this._failPending('the comm closed');
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // already gone with its kernel
      }
    }
  }

  private _failPending(error: string): void {
    this._pending.forEach(({ resolve, timer }, id) => {
      clearTimeout(timer);
      resolve({ type: 'reply', id, command: '', ok: false, error, result: null });
    });
    this._pending.clear();
  }

  private _kernelStatus(status: string): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._closeComm();
      this._session = null;
      this._set('restarted');
    }
  }

  private _message(data: unknown): void {
    if (!isServerMessage(data)) {
      return;
    }
    if (data.type === 'reply') {
      const p = this._pending.get(data.id);
      if (p) {
        clearTimeout(p.timer);
        this._pending.delete(data.id);
        p.resolve(data);
      }
      return;
    }
    this._session = data.state.session;
    this._status = 'connected';
    this._changed.emit();
  }

  private _set(status: ConnectionStatus): void {
    this._status = status;
    this._changed.emit();
  }
}
