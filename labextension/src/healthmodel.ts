/**
 * The "Training health" panel's model: one comm (`kernelcore.health`, Python's health_comm.py) to the active
 * notebook's kernel. It holds the last state the kernel sent (pushed as a recorded loop's iterations end and
 * after each cell, or answered to a request) and sends what the person asks to see. Every request resolves
 * exactly once: with the kernel's reply, or failed when the comm closes or after TIMEOUT_MS.
 */
import { ISignal, Signal } from '@lumino/signaling';
import type { HealthCurve, HealthOpRow, HealthOverview } from './protocol.generated';
import type { CommLike, KernelLike } from './debugmodel';

export const HEALTH_TARGET = 'kernelcore.health';
const TIMEOUT_MS = 60_000;

export interface RecorderEntry {
  name: string;
  label: string;
  iterations: number;
  stopped: boolean;
}

export interface HealthPayload {
  overview: HealthOverview;
  ops: HealthOpRow[];
  loss: HealthCurve | Record<string, never>;
  grads: HealthCurve[];
  status: string;
  page: number;
}

export interface HealthViewChoice {
  stat: string;
  sort: string;
  filter: string;
  page: number;
  points: number;
}

export interface HealthPanelState {
  recorders: RecorderEntry[];
  recorder: string | null;
  hint: string;
  loss_name: string | null;
  view: HealthViewChoice;
  payload: HealthPayload | null;
}

export interface HealthReply {
  req: number | null;
  ok: boolean;
  error: string | null;
  result: unknown;
}

export type HealthStatus = 'no-notebook' | 'no-kernel' | 'connecting' | 'no-target' | 'connected' | 'restarted';

function isReply(x: unknown): x is HealthReply {
  const r = x as HealthReply;
  return !!r && typeof r === 'object' && typeof r.ok === 'boolean' && (r.req === null || typeof r.req === 'number');
}

function isState(x: unknown): x is HealthPanelState {
  const s = x as HealthPanelState;
  return !!s && typeof s === 'object' && Array.isArray(s.recorders) && typeof s.view === 'object' && s.view !== null;
}

export class HealthModel {
  private _state: HealthPanelState | null = null;
  private _status: HealthStatus = 'no-notebook';
  private _kernel: KernelLike | null = null;
  private _comm: CommLike | null = null;
  private _next = 1;
  private _pending = new Map<number, { resolve: (r: HealthReply) => void; timer: ReturnType<typeof setTimeout> }>();
  private _changed = new Signal<HealthModel, void>(this);
  private _onStatus = (_: unknown, status: string) => this._kernelStatus(status);
  /** the last error a request got (shown until the next state) */
  error = '';

  get state(): HealthPanelState | null {
    return this._state;
  }

  get status(): HealthStatus {
    return this._status;
  }

  get changed(): ISignal<HealthModel, void> {
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
        return 'the kernel has not imported kernelcore_widgets yet: run `import kernelcore_widgets` in a cell';
      case 'restarted':
        return 'kernel restarted; re-run the cell that records the loop';
      case 'connected':
        return '';
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
    this._state = null;
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

  /** Ask for the state with these choices (remembered by the kernel for the pushes that follow). */
  show(choice: Partial<HealthViewChoice> & { recorder?: string }): Promise<HealthReply> {
    return this._request({ type: 'state', ...choice });
  }

  /** Open a debug session right after op (block, op) in `iteration` (the debugger sidebar follows it). */
  select(block: number, op: number, iteration: number): Promise<HealthReply> {
    const recorder = this._state?.recorder ?? undefined;
    return this._request({ type: 'select', block, op, iteration, ...(recorder ? { recorder } : {}) });
  }

  dispose(): void {
    this.setKernel(null, false);
    Signal.clearData(this);
  }

  // -- internals ------------------------------------------------------------------------------------------
  private _request(body: Record<string, unknown>): Promise<HealthReply> {
    const req = this._next++;
    const comm = this._comm;
    if (!comm || this._status !== 'connected') {
      return Promise.resolve({ req, ok: false, error: this.statusText || 'not connected', result: null });
    }
    return new Promise<HealthReply>(resolve => {
      const timer = setTimeout(() => {
        this._pending.delete(req);
        resolve({ req, ok: false, error: 'the kernel did not answer (busy running a cell?)', result: null });
      }, TIMEOUT_MS);
      this._pending.set(req, { resolve, timer });
      comm.send({ req, ...body });
    });
  }

  private _open(): void {
    const kernel = this._kernel;
    if (!kernel) {
      return;
    }
    let comm: CommLike;
    try {
      comm = kernel.createComm(HEALTH_TARGET);
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
          this._state = null;
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
    this._pending.forEach(({ resolve, timer }, req) => {
      clearTimeout(timer);
      resolve({ req, ok: false, error, result: null });
    });
    this._pending.clear();
  }

  private _kernelStatus(status: string): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._closeComm();
      this._state = null;
      this._set('restarted');
    }
  }

  private _message(data: unknown): void {
    if (!isReply(data)) {
      return;
    }
    if (data.ok && isState(data.result)) {
      this._state = data.result;
      this.error = '';
    } else if (!data.ok && data.error) {
      this.error = data.error;
    }
    this._status = 'connected';
    if (data.req !== null) {
      const p = this._pending.get(data.req);
      if (p) {
        clearTimeout(p.timer);
        this._pending.delete(data.req);
        p.resolve(data);
      }
    }
    this._changed.emit();
  }

  private _set(status: HealthStatus): void {
    this._status = status;
    this._changed.emit();
  }
}
