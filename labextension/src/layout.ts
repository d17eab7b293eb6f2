/**
 * Graphviz in the browser, off the main thread: one Web Worker per page (kc-layout-worker.js, @viz-js/viz
 * with its WASM inlined, served by the JupyterLab extension as a static asset), shared by every view and
 * every widget on the page, so Graphviz is fetched and compiled once and no widget module carries it.
 * A layout has a time budget (past it the worker is stopped and the view says so) and can be cancelled
 * (a newer layout of the same view supersedes it). The SVG text is parsed and sanitized here.
 */
import { nextTask, sanitizeSvg } from './dom';

export interface LayoutOptions {
  /** Milliseconds before the layout is abandoned (the worker is stopped and restarted). */
  budgetMs?: number;
  /** Set by the caller to abandon this layout (e.g. a newer one of the same view started). */
  signal?: { cancelled: boolean };
}

export type LayoutEngine = (dot: string, options?: LayoutOptions) => Promise<SVGSVGElement>;

export const LAYOUT_BUDGET_MS = 20_000;
const WORKER_FILE = 'kc-layout-worker.js';
const SHARED = '__kernelcoreLayout';

export class LayoutError extends Error {}

/** Where the worker script is served: the page's JupyterLab extension assets (override: globalThis.__kernelcoreLayoutWorkerUrl). */
export function workerUrl(): string {
  const g = globalThis as unknown as { __kernelcoreLayoutWorkerUrl?: string };
  if (g.__kernelcoreLayoutWorkerUrl) {
    return g.__kernelcoreLayoutWorkerUrl;
  }
  let ext = '/lab/extensions';
  const el = typeof document !== 'undefined' ? document.getElementById('jupyter-config-data') : null;
  if (el?.textContent) {
    try {
      const c = JSON.parse(el.textContent) as { fullLabextensionsUrl?: string; baseUrl?: string };
      if (typeof c.fullLabextensionsUrl === 'string' && c.fullLabextensionsUrl) {
        ext = c.fullLabextensionsUrl;
      } else if (typeof c.baseUrl === 'string') {
        ext = c.baseUrl.replace(/\/?$/, '/') + 'lab/extensions';
      }
    } catch {
      // keep the default
    }
  }
  return `${ext.replace(/\/$/, '')}/@kernelcore/labextension/static/${WORKER_FILE}`;
}

type Job = { id: number; dot: string; resolve: (svg: string) => void; reject: (e: Error) => void; timer?: ReturnType<typeof setTimeout>; started?: number };

/** The page's one layout worker: jobs run one at a time, the oldest first. */
class SharedLayout {
  private _worker: Worker | null = null;
  private _queue: Job[] = [];
  private _running: Job | null = null;
  private _next = 1;
  private _broken: string | null = null;
  /** How many workers were started (a stopped layout restarts it). */
  starts = 0;

  run(dot: string, budgetMs: number, signal?: { cancelled: boolean }): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const job: Job = { id: this._next++, dot, resolve, reject };
      (job as Job & { signal?: { cancelled: boolean }; budget: number }).signal = signal;
      (job as Job & { budget: number }).budget = budgetMs;
      this._queue.push(job);
      this._pump();
    });
  }

  /**
   * Start the worker now, with nothing to lay out, so that Graphviz is fetched and compiled (in the worker,
   * off the main thread) before the first graph needs it. Quiet: a failure here is met again, and
   * reported, by the first real layout.
   */
  warm(): void {
    if (this._worker || this._broken) {
      return;
    }
    try {
      this._start();
    } catch {
      // the first layout says why
    }
  }

  /** Drop queued jobs that were cancelled; stop the running one if it was. */
  sweep(): void {
    this._queue = this._queue.filter(j => {
      const s = (j as Job & { signal?: { cancelled: boolean } }).signal;
      if (s?.cancelled) {
        j.reject(new LayoutError('cancelled'));
        return false;
      }
      return true;
    });
    const r = this._running as (Job & { signal?: { cancelled: boolean } }) | null;
    if (r?.signal?.cancelled) {
      this._stop(new LayoutError('cancelled'));
    }
  }

  private _start(): Worker {
    if (!this._worker) {
      const url = workerUrl();
      let w: Worker;
      try {
        w = new Worker(url);
      } catch (err) {
        throw new LayoutError(`the Graphviz layout worker could not start from ${url}: ${String((err as Error)?.message ?? err)}`);
      }
      this.starts++;
      w.onmessage = ev => this._onMessage(ev.data);
      w.onerror = ev => {
        ev.preventDefault?.();
        this._broken = `the Graphviz layout worker failed to load from ${url} (is the kernelcore JupyterLab extension installed?)${ev.message ? ': ' + ev.message : ''}`;
        this._fail(new LayoutError(this._broken));
      };
      this._worker = w;
    }
    return this._worker;
  }

  private _pump(): void {
    this.sweep();
    if (this._running || !this._queue.length) {
      return;
    }
    const job = this._queue.shift()!;
    let w: Worker;
    try {
      w = this._start();
    } catch (err) {
      job.reject(err as Error);
      this._pump();
      return;
    }
    this._running = job;
    job.started = performance.now();
    const budget = (job as Job & { budget: number }).budget;
    job.timer = setTimeout(
      () => this._stop(new LayoutError(`the layout took longer than ${Math.round(budget / 1000)} s and was stopped: fold some groups and try again`)),
      budget
    );
    w.postMessage({ id: job.id, dot: job.dot });
  }

  private _onMessage(m: { id?: number; svg?: string; error?: string; ready?: boolean }): void {
    if (m.ready) {
      this._broken = null;
      return;
    }
    const job = this._running;
    if (m.id === -1 && m.error) {
      this._broken = m.error;
      this._fail(new LayoutError(m.error));
      return;
    }
    if (!job || m.id !== job.id) {
      return;
    }
    clearTimeout(job.timer);
    this._running = null;
    if (typeof m.svg === 'string') {
      job.resolve(m.svg);
    } else {
      job.reject(new LayoutError(m.error ?? 'layout failed'));
    }
    this._pump();
  }

  /** Stop the worker (a runaway or cancelled layout); the next job starts a fresh one. */
  private _stop(err: Error): void {
    const job = this._running;
    this._running = null;
    this._worker?.terminate();
    this._worker = null;
    if (job) {
      clearTimeout(job.timer);
      job.reject(err);
    }
    this._pump();
  }

  private _fail(err: Error): void {
    const all = [...(this._running ? [this._running] : []), ...this._queue];
    this._running = null;
    this._queue = [];
    this._worker?.terminate();
    this._worker = null;
    all.forEach(j => {
      clearTimeout(j.timer);
      j.reject(err);
    });
  }
}

/** The page's shared layout (one per page, whichever module asks first makes it). */
export function sharedLayout(): SharedLayout {
  const g = globalThis as unknown as Record<string, SharedLayout | undefined>;
  if (!g[SHARED]) {
    g[SHARED] = new SharedLayout();
  }
  return g[SHARED]!;
}

/** SVG text to an SVG element, not yet sanitized. */
function parseOnly(text: string): SVGSVGElement {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = doc.documentElement as unknown as SVGSVGElement;
  if (!svg || svg.nodeName.toLowerCase() !== 'svg') {
    throw new LayoutError('Graphviz returned no SVG');
  }
  return svg;
}

/** SVG text to a sanitized SVG element. */
export function parseSvg(text: string): SVGSVGElement {
  const svg = parseOnly(text);
  sanitizeSvg(svg);
  return svg;
}

/** Lay `dot` out with Graphviz "dot" in the page's worker and return the SVG element, sanitized. */
export const workerLayout: LayoutEngine = async (dot, options = {}) => {
  const shared = sharedLayout();
  const text = await shared.run(dot, options.budgetMs ?? LAYOUT_BUDGET_MS, options.signal);
  if (options.signal?.cancelled) {
    throw new LayoutError('cancelled');
  }
  // parsing and sanitizing a big drawing are two tasks, not one long one
  const svg = parseOnly(text);
  await nextTask();
  if (options.signal?.cancelled) {
    throw new LayoutError('cancelled');
  }
  sanitizeSvg(svg);
  return svg;
};

let engine: LayoutEngine = workerLayout;

/** The engine views use (tests may swap it). */
export function layoutEngine(): LayoutEngine {
  return engine;
}

export function setLayoutEngine(e: LayoutEngine | null): void {
  engine = e ?? workerLayout;
}

/** Cancel what `signal` stands for: drop it from the queue, or stop it if it is running. */
export function cancelLayout(signal: { cancelled: boolean }): void {
  signal.cancelled = true;
  sharedLayout().sweep();
}
