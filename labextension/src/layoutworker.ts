/**
 * The Graphviz layout worker (built alone into kc-layout-worker.js, @viz-js/viz and its WASM inlined):
 * lays out DOT text off the main thread. One per page, shared by every view (layout.ts starts it).
 * Messages in: {id, dot}; out: {id, svg} or {id, error}, and {ready: true} once Graphviz is compiled.
 */
import { instance } from '@viz-js/viz';

type Viz = { renderString(dot: string, options: { format: string; engine: string }): string };
const scope = globalThis as unknown as {
  postMessage(m: unknown): void;
  onmessage: ((ev: { data: { id: number; dot: string } }) => void) | null;
};
const viz: Promise<Viz> = instance() as Promise<Viz>;
void viz.then(
  () => scope.postMessage({ ready: true }),
  err => scope.postMessage({ id: -1, error: `Graphviz did not start: ${String((err as Error)?.message ?? err)}` })
);
scope.onmessage = async ev => {
  const { id, dot } = ev.data;
  try {
    const v = await viz;
    const t0 = performance.now();
    const svg = v.renderString(dot, { format: 'svg', engine: 'dot' });
    scope.postMessage({ id, svg, ms: performance.now() - t0 });
  } catch (err) {
    scope.postMessage({ id, error: String((err as Error)?.message ?? err) });
  }
};
