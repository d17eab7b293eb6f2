/**
 * The debugger model: one comm (`kernelcore.debugger`) to the active notebook's kernel, typed requests and
 * the session state the kernel pushes. It knows about kernel restarts (the state says so until the comm
 * opens again) and about kernels that have not imported kernelcore_widgets (the comm closes at once).
 */
import { ISignal, Signal } from '@lumino/signaling';
import { KernelChannel, KernelLike, statusSentence } from './kernelchannel';
import { COMM_TARGET, Command, CommandArgs, isServerMessage, MOVES, Reply, Session } from './protocol';
import { ConnectionStatus, IKernelcoreDebuggerModel } from './tokens';

export type { CommLike, KernelLike } from './kernelchannel';

const TIMEOUT_MS = 60_000;

/** The requests that run the program (the moves, run to, run N): one at a time; Pause stops the one running. */
const RUNS = new Set<Command>([...MOVES.map(m => m.name), 'run_to', 'run_n']);

export class DebuggerModel implements IKernelcoreDebuggerModel {
  private _session: Session | null = null;
  /** requests of RUNS sent and not answered yet */
  private _running = 0;
  private _changed: Signal<IKernelcoreDebuggerModel, void> = new Signal<IKernelcoreDebuggerModel, void>(this);
  private _channel = new KernelChannel<Reply>(COMM_TARGET, {
    message: data => this._message(data),
    forget: () => {
      this._session = null;
    },
    changed: () => this._changed.emit(),
    failure: (id, error) => ({ type: 'reply', id, command: '', ok: false, error, result: null })
  });

  get session(): Session | null {
    return this._session;
  }

  get status(): ConnectionStatus {
    return this._channel.status;
  }

  /** A move sent to the kernel runs: the views say "running\u2026", disable the moves and offer Pause. */
  get busy(): boolean {
    return this._running > 0;
  }

  get changed(): ISignal<IKernelcoreDebuggerModel, void> {
    return this._changed;
  }

  get statusText(): string {
    return statusSentence(this.status, {
      'no-target': 'the kernel has no kernelcore debugger yet: run `import kernelcore_widgets` (or start a session) in a cell',
      restarted: 'kernel restarted; re-run the cell that starts the debug session',
      connected: this._session ? '' : 'no debug session in this kernel: start one with kc.debug(program, feed=...)'
    });
  }

  /** Follow another kernel (or none). */
  setKernel(kernel: KernelLike | null, hasNotebook = true): void {
    this._channel.setKernel(kernel, hasNotebook);
  }

  reconnect(): void {
    this._channel.reconnect();
  }

  request<C extends Command>(command: C, args: CommandArgs[C] = {} as CommandArgs[C]): Promise<Reply> {
    const id = this._channel.nextId();
    if (!this._channel.connected) {
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
      const timeout = runs ? undefined : { ms: TIMEOUT_MS, reply: { type: 'reply', id, command, ok: false, error: 'the kernel did not answer (busy?)', result: null } as Reply };
      this._channel.send(id, { type: 'request', id, command, args }, resolve, timeout);
    });
  }

  dispose(): void {
    this.setKernel(null, false);
    Signal.clearData(this);
  }

  // -- internals ------------------------------------------------------------------------------------------
  private _message(data: unknown): void {
    if (!isServerMessage(data)) {
      return;
    }
    if (data.type === 'reply') {
      this._channel.settle(data.id, data);
      return;
    }
    this._session = data.state.session;
    this._channel.markConnected();
    this._changed.emit();
  }
}
