/**
 * Where a lazy program's parts come from (ProgramJSON version 3, `lazy` set): the ops and vars of a group
 * when it is opened, and search over every name (kernelcore/view/program_parts.py answers both).
 *  - a widget: custom messages over its own comm (`{"type": "contents"|"search", "req"}` ->
 *    `{"type": "parts", "req", "ok", "error", "result"}`);
 *  - a cell result (MIME, no widget): the `kernelcore.program` comm of the notebook's kernel, opened with
 *    the program id of the bundle (`lazy.id`). The JupyterLab plugin tells this module how to find the
 *    kernel of the notebook an output sits in (`setKernelLookup`).
 * When no answer can come (no kernel, a restarted one, a program the kernel no longer has), the request
 * fails with a PartsError whose message says to re-run the cell.
 */
import type { WidgetModel } from './model';
import type { GroupContentsJSON, SearchResultJSON } from './schema';

/** A search over a program in parts (the contract's SearchResultJSON). */
export type SearchResult = SearchResultJSON;

export interface PartsSource {
  /** open `groups` of `block`, the view having the contents of `loaded`; `pane` "pruned": of the pruned
   * program a widget draws beside (side by side) */
  contents(block: number, groups: Array<string | null>, loaded: string[], pane?: 'pruned'): Promise<GroupContentsJSON>;
  search(query: string, pane?: 'pruned'): Promise<SearchResult>;
}

export class PartsError extends Error {}

/** How long a request waits for the kernel. */
export const PARTS_TIMEOUT_MS = 20_000;
export const RERUN = 're-run the cell to open it';

type Pending = { resolve: (v: any) => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> };

/** Requests with ids, answered by `{req, ok, error, result}` messages. */
class Requests {
  private _n = 0;
  readonly pending = new Map<number, Pending>();

  ask(send: (msg: Record<string, unknown>) => void, msg: Record<string, unknown>): Promise<any> {
    const req = ++this._n;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(req);
        reject(new PartsError(`the kernel did not answer within ${PARTS_TIMEOUT_MS / 1000} s; ${RERUN}`));
      }, PARTS_TIMEOUT_MS);
      this.pending.set(req, { resolve, reject, timer });
      try {
        send({ ...msg, req });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(req);
        reject(new PartsError(`could not reach the kernel (${String((err as Error)?.message ?? err)}); ${RERUN}`));
      }
    });
  }

  answer(msg: any): void {
    const p = msg && typeof msg.req === 'number' ? this.pending.get(msg.req) : undefined;
    if (!p) {
      return;
    }
    clearTimeout(p.timer);
    this.pending.delete(msg.req);
    if (msg.ok) {
      p.resolve(msg.result);
    } else {
      p.reject(new PartsError(String(msg.error ?? `the kernel could not answer; ${RERUN}`)));
    }
  }

  failAll(why: string): void {
    this.pending.forEach(p => {
      clearTimeout(p.timer);
      p.reject(new PartsError(why));
    });
    this.pending.clear();
  }
}

/** A widget's parts: custom messages over its model's comm. */
export class ModelPartsSource implements PartsSource {
  private _req = new Requests();
  private _onMsg = (msg: any) => {
    if (msg && msg.type === 'parts') {
      this._req.answer(msg);
    }
  };

  constructor(private _model: WidgetModel) {
    _model.on('msg:custom', this._onMsg);
  }

  contents(block: number, groups: Array<string | null>, loaded: string[], pane?: 'pruned'): Promise<GroupContentsJSON> {
    return this._req.ask(m => this._model.send(m), { type: 'contents', block, groups, loaded, ...(pane ? { pane } : {}) });
  }

  search(query: string, pane?: 'pruned'): Promise<SearchResult> {
    return this._req.ask(m => this._model.send(m), { type: 'search', query, ...(pane ? { pane } : {}) });
  }

  dispose(): void {
    this._model.off('msg:custom', this._onMsg);
    this._req.failAll('closed');
  }
}

/** The small part of a JupyterLab kernel connection used here. */
export interface KernelLike {
  status?: string;
  createComm(target: string, commId?: string): CommLike;
}
export interface CommLike {
  readonly isDisposed?: boolean;
  onMsg: (msg: any) => void;
  onClose: (msg: any) => void;
  open(data?: any): unknown;
  send(data: any): unknown;
  close?(data?: any): unknown;
}

type KernelLookup = (node: HTMLElement) => KernelLike | null;
const KEY = '__kernelcoreKernelLookup';

/** The plugin's way to find the kernel behind an output node (shared by every bundle on the page). */
export function setKernelLookup(fn: KernelLookup | null): void {
  (globalThis as any)[KEY] = fn;
}

export function kernelFor(node: HTMLElement): KernelLike | null {
  const fn = (globalThis as any)[KEY] as KernelLookup | undefined;
  try {
    return fn ? fn(node) : null;
  } catch {
    return null;
  }
}

export const PROGRAM_TARGET = 'kernelcore.program';

/** A cell result's parts: the kernelcore.program comm of the kernel of the notebook the output is in. */
export class CommPartsSource implements PartsSource {
  private _req = new Requests();
  private _comm: CommLike | null = null;
  private _kernel: KernelLike | null = null;
  private _locate: () => KernelLike | null;

  /** `where`: the output node (its notebook's kernel is found through the plugin), or a kernel getter. */
  constructor(
    where: HTMLElement | (() => KernelLike | null),
    private _programId: string
  ) {
    this._locate = typeof where === 'function' ? where : () => kernelFor(where);
  }

  private _send = (msg: Record<string, unknown>) => {
    const kernel = this._locate();
    if (!kernel || kernel.status === 'dead') {
      throw new Error('no kernel');
    }
    if (!this._comm || this._kernel !== kernel || this._comm.isDisposed) {
      this._kernel = kernel;
      const comm = kernel.createComm(PROGRAM_TARGET);
      comm.onMsg = (m: any) => this._req.answer(m?.content?.data);
      comm.onClose = () => {
        if (this._comm === comm) {
          this._comm = null;
        }
        this._req.failAll(`the kernel does not know this program (was it restarted, or is kernelcore_widgets not imported there?); ${RERUN}`);
      };
      comm.open({ id: this._programId });
      this._comm = comm;
    }
    this._comm.send(msg);
  };

  contents(block: number, groups: Array<string | null>, loaded: string[]): Promise<GroupContentsJSON> {
    return this._req.ask(this._send, { type: 'contents', block, groups, loaded });
  }

  search(query: string): Promise<SearchResult> {
    return this._req.ask(this._send, { type: 'search', query });
  }

  dispose(): void {
    this._req.failAll('closed');
    try {
      this._comm?.close?.();
    } catch {
      // the kernel is gone already
    }
    this._comm = null;
  }
}
