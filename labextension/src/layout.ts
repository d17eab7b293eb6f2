/**
 * Graphviz in the browser: @viz-js/viz (Graphviz compiled to WebAssembly, the WASM inlined in its JS).
 * Loaded once, on first use; its SVG output is sanitized before it reaches the page.
 */
import { sanitizeSvg } from './dom';

type Viz = { renderSVGElement(dot: string, options?: { engine?: string }): SVGSVGElement };

let vizPromise: Promise<Viz> | null = null;

export type LayoutEngine = (dot: string) => Promise<SVGSVGElement>;

function loadViz(): Promise<Viz> {
  if (!vizPromise) {
    vizPromise = import('@viz-js/viz').then(m => m.instance() as Promise<Viz>);
    vizPromise.catch(() => {
      vizPromise = null; // let a later render try again
    });
  }
  return vizPromise;
}

/** Lay `dot` out with Graphviz "dot" and return the SVG element, sanitized. */
export const vizLayout: LayoutEngine = async (dot: string) => {
  const viz = await loadViz();
  const svg = viz.renderSVGElement(dot, { engine: 'dot' });
  sanitizeSvg(svg);
  return svg;
};

let engine: LayoutEngine = vizLayout;

/** The engine views use (tests may swap it). */
export function layoutEngine(): LayoutEngine {
  return engine;
}

export function setLayoutEngine(e: LayoutEngine | null): void {
  engine = e ?? vizLayout;
}
