/**
 * Graphviz on the calling thread (@viz-js/viz imported directly): for tests and tools only. Views use
 * layout.ts, whose one worker per page is what keeps Graphviz out of every widget module.
 */
import { sanitizeSvg } from './dom';
import type { LayoutEngine } from './layout';

type Viz = { renderSVGElement(dot: string, options?: { engine?: string }): SVGSVGElement };
let vizPromise: Promise<Viz> | null = null;

export const vizLayout: LayoutEngine = async (dot: string) => {
  if (!vizPromise) {
    vizPromise = import('@viz-js/viz').then(m => m.instance() as Promise<Viz>);
  }
  const viz = await vizPromise;
  const svg = viz.renderSVGElement(dot, { engine: 'dot' });
  sanitizeSvg(svg);
  return svg;
};
