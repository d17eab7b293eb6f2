/**
 * The colour maps of every heat map (value previews, the tensor viewer) and their legend: one ramp, so a
 * colour means the same number range wherever it is drawn, and the legend is drawn from the very function
 * that paints the cells.
 */
import { formatNumber, h } from './dom';

// A perceptual ramp (viridis-like), 5 stops.
const RAMP: Array<[number, number, number]> = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37]
];

/** The sequential ramp at t in [0, 1] (clamped). */
export function rampColor(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const c = RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** The diverging map at t in [-1, 1] (clamped): blue below 0, white at 0, red above. */
export function divergingColor(t: number): string {
  const u = Math.max(-1, Math.min(1, t));
  const a = Math.round(255 * (1 - Math.abs(u)));
  return u >= 0 ? `rgb(255,${a},${a})` : `rgb(${a},${a},255)`;
}

/** A CSS gradient of `color` over [0, 1] in `steps` steps. */
export function gradientOf(color: (t: number) => string, steps = 16): string {
  const stops: string[] = [];
  for (let i = 0; i <= steps; i++) {
    stops.push(color(i / steps));
  }
  return `linear-gradient(to right, ${stops.join(', ')})`;
}

/** The sequential ramp's gradient, made once: hundreds of previews share the string. */
export const RAMP_GRADIENT = gradientOf(rampColor);

/** Where 0 falls on a bar from lo to hi (0..1), or null when the range does not straddle 0. */
export function zeroAt(lo: number | null, hi: number | null): number | null {
  if (lo === null || hi === null || !isFinite(lo) || !isFinite(hi) || !(lo < 0 && hi > 0)) {
    return null;
  }
  return -lo / (hi - lo);
}

export interface LegendOptions {
  /** the class prefix of the legend's parts (its Min, Bar, Max, Zero), e.g. jp-Kernelcore-tvLegend */
  cls?: string;
  title?: string;
  /** a precomputed gradient (else made from the colour function) */
  gradient?: string;
  /** mark where 0 falls on the bar, when the range straddles it */
  markZero?: boolean;
}

/** A colour scale: the low number, a bar of the colour map from lo to hi, the high number. */
export function colorLegend(lo: number | null, hi: number | null, color: (t: number) => string, opts: LegendOptions = {}): HTMLElement {
  const cls = opts.cls ?? 'jp-Kernelcore-tvLegend';
  const bar = h('span', { cls: `${cls}Bar`, attrs: { 'aria-hidden': 'true' } });
  bar.style.background = opts.gradient ?? gradientOf(color);
  const zero = opts.markZero ? zeroAt(lo, hi) : null;
  if (zero !== null) {
    const tick = h('span', { cls: `${cls}Zero`, title: '0' });
    tick.style.left = `${(zero * 100).toFixed(1)}%`;
    bar.appendChild(tick);
  }
  return h('div', { cls, title: opts.title ?? 'colour scale of the shown slice' }, [
    h('span', { cls: `${cls}Min`, text: lo === null ? '' : formatNumber(lo) }),
    bar,
    h('span', { cls: `${cls}Max`, text: hi === null ? '' : formatNumber(hi) })
  ]);
}
