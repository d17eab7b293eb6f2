/**
 * The "Training health" panel's model: one comm (`kernelcore.health`, Python's health_comm.py) to the active
 * notebook's kernel. It holds the last state the kernel sent (pushed as a recorded loop's iterations end and
 * after each cell, or answered to a request) and sends what the person asks to see. Every request resolves
 * exactly once: with the kernel's reply, or failed when the comm closes or after TIMEOUT_MS.
 */
import { ISignal, Signal } from '@lumino/signaling';
import type { HealthCurve, HealthOpRow, HealthOverview } from './protocol.generated';
import { KernelChannel, KernelLike, statusSentence } from './kernelchannel';
import type { ConnectionStatus } from './tokens';
import type { ControlValues } from './views/healthcontrols';

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

/** What the panel shows: the controls' choices and how many points a series has at most. */
export interface HealthViewChoice extends ControlValues {
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

export type HealthStatus = ConnectionStatus;

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
  private _changed = new Signal<HealthModel, void>(this);
  private _channel = new KernelChannel<HealthReply>(HEALTH_TARGET, {
    message: data => this._message(data),
    forget: () => {
      this._state = null;
    },
    changed: () => this._changed.emit(),
    failure: (req, error) => ({ req, ok: false, error, result: null })
  }, 'beside'); // opened beside a running cell: after "Run All" the loop's cell runs when the comm opens
  /** the last error a request got (shown until the next state) */
  error = '';

  get state(): HealthPanelState | null {
    return this._state;
  }

  get status(): HealthStatus {
    return this._channel.status;
  }

  get changed(): ISignal<HealthModel, void> {
    return this._changed;
  }

  get statusText(): string {
    return statusSentence(this.status, {
      'no-target': 'the kernel has not imported kernelcore_widgets yet: run `import kernelcore_widgets` in a cell',
      restarted: 'kernel restarted; re-run the cell that records the loop',
      connected: ''
    });
  }

  /** Follow another kernel (or none). */
  setKernel(kernel: KernelLike | null, hasNotebook = true): void {
    this._channel.setKernel(kernel, hasNotebook);
  }

  reconnect(): void {
    this._channel.reconnect();
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
    const req = this._channel.nextId();
    if (!this._channel.connected) {
      return Promise.resolve({ req, ok: false, error: this.statusText || 'not connected', result: null });
    }
    const timeout = { ms: TIMEOUT_MS, reply: { req, ok: false, error: 'the kernel did not answer (busy running a cell?)', result: null } };
    return new Promise<HealthReply>(resolve => this._channel.send(req, { req, ...body }, resolve, timeout));
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
    this._channel.markConnected();
    if (data.req !== null) {
      this._channel.settle(data.req, data);
    }
    this._changed.emit();
  }
}
