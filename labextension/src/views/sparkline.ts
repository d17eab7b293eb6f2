/**
 * Sparklines for the training-health view: a series of [iteration, value] points over a run of `iterations`
 * iterations as a small SVG, its NaN/Inf iterations as red bands and its first bad iteration as a red line.
 * Values are drawn on a symmetric log scale (sign(v) * log10(1 + |v|)): a loss that blows up from 1 to 1e30
 * would otherwise flatten everything before the blow-up into the bottom pixel row.
 */

const SVG_NS = 'http://www.w3.org/2000/svg';

export type Point = [number, number];
export type Range = [number, number];

export interface SparkOptions {
  width: number;
  height: number;
  /** iterations on the x axis: 0 .. iterations - 1 */
  iterations: number;
  bad?: Range[];
  firstBad?: number | null;
  /** a class for the root (tests and CSS find the parts by class) */
  cls?: string;
  label?: string;
}

export function symlog(v: number): number {
  return Math.sign(v) * Math.log10(1 + Math.abs(v));
}

/** The x pixel of iteration `it` (the middle of its slot). */
export function xOf(it: number, iterations: number, width: number): number {
  const n = Math.max(iterations, 1);
  return ((it + 0.5) / n) * width;
}

/** The iteration under pixel `x` of a sparkline `width` wide, clamped to the run. */
export function iterationAt(x: number, iterations: number, width: number): number {
  const n = Math.max(iterations, 1);
  return Math.max(0, Math.min(n - 1, Math.floor((x / Math.max(width, 1)) * n)));
}

/** The path (SVG `d`) through the points, y scaled to [pad, height - pad] over their symlog range. */
export function sparkPath(points: Point[], iterations: number, width: number, height: number, pad = 2): string {
  if (!points.length) {
    return '';
  }
  const ys = points.map(p => symlog(p[1]));
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const span = hi - lo || 1;
  const yOf = (y: number) => (hi === lo ? height / 2 : height - pad - ((y - lo) / span) * (height - 2 * pad));
  return points
    .map((p, i) => `${i ? 'L' : 'M'}${xOf(p[0], iterations, width).toFixed(1)},${yOf(ys[i]).toFixed(1)}`)
    .join(' ');
}

function svgEl<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    el.setAttribute(k, v);
  }
  return el;
}

/** The sparkline as an <svg>: red bands over the bad ranges, the line, a red line at the first bad iteration. */
export function sparkline(points: Point[], opts: SparkOptions): SVGSVGElement {
  const { width, height, iterations } = opts;
  const svg = svgEl('svg', {
    width: String(width),
    height: String(height),
    viewBox: `0 0 ${width} ${height}`,
    class: `jp-Kernelcore-spark ${opts.cls ?? ''}`.trim(),
    role: 'img'
  });
  if (opts.label) {
    svg.setAttribute('aria-label', opts.label);
  }
  const slot = width / Math.max(iterations, 1);
  for (const [a, b] of opts.bad ?? []) {
    const x = (a / Math.max(iterations, 1)) * width;
    svg.appendChild(
      svgEl('rect', { class: 'jp-Kernelcore-sparkBad', x: x.toFixed(1), y: '0', width: Math.max(slot * (b - a + 1), 1.5).toFixed(1), height: String(height), 'data-first': String(a), 'data-last': String(b) })
    );
  }
  const d = sparkPath(points, iterations, width, height);
  if (d) {
    svg.appendChild(svgEl('path', { class: 'jp-Kernelcore-sparkLine', d, fill: 'none' }));
  }
  if (opts.firstBad !== null && opts.firstBad !== undefined) {
    const x = xOf(opts.firstBad, iterations, width).toFixed(1);
    svg.appendChild(svgEl('line', { class: 'jp-Kernelcore-sparkFirstBad', x1: x, x2: x, y1: '0', y2: String(height), 'data-iteration': String(opts.firstBad) }));
  }
  return svg;
}
