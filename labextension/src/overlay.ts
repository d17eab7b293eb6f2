/**
 * A graph overlay (the ProgramGraph `overlay_spec` trait, written by kernelcore_widgets/overlay.py): ops or
 * variables coloured by a number each, on a gradient (linear or log) or in threshold bands, with a legend.
 * A folded group shows the aggregate (max, min or mean) of the members the view knows, and its tooltip says
 * so; Python sends the aggregates of a big program's groups whose members were not fetched (`groups`).
 *
 * Fills are opaque colours from a fixed palette, and each node's text is black or white, whichever contrasts
 * more with its fill: readable on the light and the dark theme alike. NaN and +-Infinity have colours of their
 * own (a NaN is what a health overlay looks for).
 */
import { h } from './dom';
import type { ProgramGraphModel } from './graph';
import type { GraphPane } from './graphpane';

export type Aggregate = 'max' | 'min' | 'mean';

export interface Overlay {
  on: 'ops' | 'vars';
  label: string;
  /** 'gradient' | 'log', or increasing thresholds (n of them cut n+1 bands) */
  scale: 'gradient' | 'log' | number[];
  colors: string[];
  aggregate: Aggregate;
  values: Map<string, number>;
  /** group id -> the aggregate of all its members, from Python (a big program's unfetched groups) */
  groups: Map<string, GroupValue>;
  /** the finite values' range (log: the smallest positive one) */
  lo: number;
  hi: number;
}

export interface GroupValue {
  value: number;
  count: number;
}

/** A gradient's stops (light yellow to dark red: low to high) and the bands' colours (green to red). */
export const GRADIENT = ['#ffffcc', '#fed976', '#fd8d3c', '#e31a1c', '#800026'];
export const BANDS = ['#1a9850', '#91cf60', '#fee08b', '#fc8d59', '#d73027'];
export const NONFINITE = { nan: '#d6278c', posInf: '#5e3c99', negInf: '#0571b0' };

const SCALES = new Set(['gradient', 'log']);
const AGGREGATES = new Set(['max', 'min', 'mean']);
const HEX = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const MARK = 'data-kc-overlay';

/** A number of the trait: finite, or "NaN" / "Infinity" / "-Infinity" (JSON has none of them). */
export function numberOf(v: unknown): number | null {
  if (typeof v === 'number') {
    return v;
  }
  if (v === 'NaN') {
    return NaN;
  }
  if (v === 'Infinity') {
    return Infinity;
  }
  if (v === '-Infinity') {
    return -Infinity;
  }
  return null;
}

function groupsOf(raw: unknown): Map<string, GroupValue> {
  const out = new Map<string, GroupValue>();
  if (raw && typeof raw === 'object') {
    for (const [gid, g] of Object.entries(raw as Record<string, { value?: unknown; count?: unknown }>)) {
      const value = numberOf(g?.value);
      if (value !== null && typeof g?.count === 'number') {
        out.set(gid, { value, count: g.count });
      }
    }
  }
  return out;
}

/** The overlay the trait describes, or null for none (or for something that is not one). */
export function parseOverlay(raw: unknown): Overlay | null {
  if (!raw || typeof raw !== 'object' || !('values' in raw)) {
    return null;
  }
  const r = raw as Record<string, unknown>;
  const values = new Map<string, number>();
  for (const [id, v] of Object.entries((r.values ?? {}) as Record<string, unknown>)) {
    const x = numberOf(v);
    if (x !== null) {
      values.set(id, x);
    }
  }
  const scale = Array.isArray(r.scale) && r.scale.every(x => typeof x === 'number') ? (r.scale as number[]) : SCALES.has(String(r.scale)) ? (r.scale as 'gradient' | 'log') : 'gradient';
  const colors = Array.isArray(r.colors) ? r.colors.filter((c): c is string => typeof c === 'string' && HEX.test(c)) : [];
  const o: Overlay = {
    on: r.on === 'vars' ? 'vars' : 'ops',
    label: typeof r.label === 'string' ? r.label : 'value',
    scale,
    colors,
    aggregate: AGGREGATES.has(String(r.aggregate)) ? (r.aggregate as Aggregate) : 'max',
    values,
    groups: groupsOf(r.groups),
    lo: 0,
    hi: 0
  };
  const finite = [...values.values(), ...[...o.groups.values()].map(g => g.value)].filter(x => Number.isFinite(x) && (scale !== 'log' || x > 0));
  o.lo = finite.length ? least(finite) : 0;
  o.hi = finite.length ? -least(finite.map(x => -x)) : 0;
  return o;
}

function rgbOf(hex: string): [number, number, number] {
  const s = hex.length === 4 ? hex.slice(1).split('').map(c => c + c).join('') : hex.slice(1);
  return [0, 2, 4].map(i => parseInt(s.slice(i, i + 2), 16)) as [number, number, number];
}

function hexOf(rgb: number[]): string {
  return '#' + rgb.map(c => Math.round(Math.min(255, Math.max(0, c))).toString(16).padStart(2, '0')).join('');
}

/** The colour at `t` (0..1) along `stops`, mixed in RGB between the two around it. */
export function along(stops: string[], t: number): string {
  const u = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const k = Math.min(stops.length - 2, Math.floor(u));
  const a = rgbOf(stops[k]);
  const b = rgbOf(stops[k + 1]);
  return hexOf(a.map((x, i) => x + (b[i] - x) * (u - k)));
}

/** The colour of each of n bands: the given ones, else the palette spread over n. */
export function bandColors(o: Overlay, n: number): string[] {
  if (o.colors.length === n) {
    return o.colors;
  }
  return Array.from({ length: n }, (_, i) => along(BANDS, n === 1 ? 0 : i / (n - 1)));
}

/** Where a finite `x` falls: 0..1 along the gradient, or the index of its band. */
export function position(o: Overlay, x: number): number {
  if (Array.isArray(o.scale)) {
    return o.scale.filter(t => x >= t).length;
  }
  if (o.scale === 'log') {
    if (x <= 0 || o.hi <= o.lo) {
      return x > 0 && x >= o.hi ? 1 : 0;
    }
    return (Math.log10(x) - Math.log10(o.lo)) / (Math.log10(o.hi) - Math.log10(o.lo));
  }
  return o.hi > o.lo ? (x - o.lo) / (o.hi - o.lo) : 1;
}

/** The fill for value `x`. */
export function colorFor(o: Overlay, x: number): string {
  if (Number.isNaN(x)) {
    return NONFINITE.nan;
  }
  if (!Number.isFinite(x)) {
    return x > 0 ? NONFINITE.posInf : NONFINITE.negInf;
  }
  if (Array.isArray(o.scale)) {
    return bandColors(o, o.scale.length + 1)[position(o, x)];
  }
  return along(o.colors.length >= 2 ? o.colors : GRADIENT, position(o, x));
}

function luminance(hex: string): number {
  const [r, g, b] = rgbOf(hex).map(c => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** Black or white, whichever contrasts more with `fill` (WCAG contrast ratio). */
export function textOn(fill: string): '#000000' | '#ffffff' {
  const l = luminance(fill);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? '#000000' : '#ffffff';
}

/** The smallest of `xs` (a loop: Math.min(...xs) overflows the stack past some 10^5 arguments). */
function least(xs: number[]): number {
  let m = Infinity;
  for (const x of xs) {
    m = x < m ? x : m;
  }
  return m;
}

/** max / min / mean of `xs`; NaN when any is NaN (a group holding a NaN must show it). */
export function aggregate(xs: number[], how: Aggregate): number {
  if (!xs.length || xs.some(x => Number.isNaN(x))) {
    return NaN;
  }
  if (how === 'max') {
    return -least(xs.map(x => -x));
  }
  if (how === 'min') {
    return least(xs);
  }
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** A value as the legend and tooltips print it. */
export function formatValue(x: number): string {
  if (Number.isNaN(x)) {
    return 'NaN';
  }
  if (!Number.isFinite(x)) {
    return x > 0 ? '+Inf' : '\u2212Inf';
  }
  return x === 0 || (Math.abs(x) >= 1e-3 && Math.abs(x) < 1e5) ? String(Number(x.toPrecision(4))) : x.toExponential(2);
}

/**
 * The aggregate of each cluster over the overlay's values of the nodes inside it (at any depth) that the
 * view knows; Python's aggregate where it sent one (it knows the members not fetched).
 */
export function clusterValues(graph: ProgramGraphModel, o: Overlay): Map<string, GroupValue> {
  const members = new Map<string, number[]>();
  o.values.forEach((x, id) => {
    const key = graph.byId.get(id);
    const n = key ? graph.nodes.get(key) : undefined;
    if (!n || (n.kind === 'op') !== (o.on === 'ops')) {
      return;
    }
    for (const cid of graph.ancestors(n.container)) {
      let list = members.get(cid);
      if (!list) {
        members.set(cid, (list = []));
      }
      list.push(x);
    }
  });
  const out = new Map<string, GroupValue>();
  members.forEach((xs, cid) => out.set(cid, { value: aggregate(xs, o.aggregate), count: xs.length }));
  o.groups.forEach((g, gid) => out.set(gid, g));
  return out;
}

function shapesOf(el: Element): Element[] {
  return Array.from(el.children).filter(c => ['polygon', 'path', 'ellipse'].includes(c.tagName.toLowerCase()));
}

function paint(el: Element, fill: string, tip: string): void {
  el.setAttribute(MARK, '');
  shapesOf(el).forEach(s => (s as SVGElement).style.setProperty('fill', fill));
  const text = textOn(fill);
  el.querySelectorAll('text').forEach(t => (t as SVGElement).style.setProperty('fill', text));
  const title = el.querySelector('title');
  if (title) {
    if (!title.hasAttribute('data-kc-title')) {
      title.setAttribute('data-kc-title', title.textContent ?? '');
    }
    title.textContent = `${title.getAttribute('data-kc-title')}\n${tip}`;
  }
}

function unpaint(el: Element): void {
  el.removeAttribute(MARK);
  shapesOf(el).forEach(s => (s as SVGElement).style.removeProperty('fill'));
  el.querySelectorAll('text').forEach(t => (t as SVGElement).style.removeProperty('fill'));
  const title = el.querySelector('title');
  if (title?.hasAttribute('data-kc-title')) {
    title.textContent = title.getAttribute('data-kc-title');
    title.removeAttribute('data-kc-title');
  }
}

/** Colour the pane's drawn nodes and folded groups by `o` (null: take a previous overlay off). */
export function applyOverlay(pane: GraphPane, graph: ProgramGraphModel | null, o: Overlay | null): void {
  pane.svg?.querySelectorAll(`[${MARK}]`).forEach(unpaint);
  if (!o || !graph || !pane.svg) {
    return;
  }
  const folded = new Set<Element>();
  const groups = clusterValues(graph, o);
  pane.clusterEls.forEach((el, cid) => {
    const g = groups.get(cid);
    if (!/\bnode\b/.test(el.getAttribute('class') ?? '')) {
      return; // an open cluster: its members show their own values
    }
    folded.add(el);
    if (g) {
      const nan = Number.isNaN(g.value) ? ' (a member is NaN)' : '';
      const what = `${o.aggregate} of ${g.count} ${o.on === 'ops' ? 'op' : 'variable'}${g.count === 1 ? '' : 's'}`;
      paint(el, colorFor(o, g.value), `${o.label}: ${formatValue(g.value)}, the ${what} inside${nan}`);
    }
  });
  o.values.forEach((x, id) => {
    const el = pane.nodeEls.get(id);
    if (el && !folded.has(el)) {
      paint(el, colorFor(o, x), `${o.label}: ${formatValue(x)}`);
    }
  });
}

function swatch(fill: string, text: string): HTMLElement {
  const s = h('span', { cls: 'jp-Kernelcore-legendItem' }, [h('span', { cls: 'jp-Kernelcore-swatch' }), text]);
  (s.firstElementChild as HTMLElement).style.background = fill;
  return s;
}

function bandText(cuts: number[], i: number): string {
  if (i === 0) {
    return `< ${formatValue(cuts[0])}`;
  }
  if (i === cuts.length) {
    return `\u2265 ${formatValue(cuts[i - 1])}`;
  }
  return `${formatValue(cuts[i - 1])} \u2013 ${formatValue(cuts[i])}`;
}

/** A log scale has no place for 0 or less: the legend says where such values went. */
function logNote(o: Overlay): string {
  const below = [...o.values.values()].some(x => x <= 0);
  return below ? ' (log; values \u2264 0 take the lowest colour)' : ' (log)';
}

/** The overlay's legend: its label, the scale with its range or bands, the non-finite colours in use, and
 * what a folded group shows. */
export function overlayLegend(o: Overlay): HTMLElement {
  const items: Array<HTMLElement | string> = [h('b', { text: o.label })];
  if (Array.isArray(o.scale)) {
    const colors = bandColors(o, o.scale.length + 1);
    colors.forEach((c, i) => items.push(swatch(c, bandText(o.scale as number[], i))));
  } else {
    const stops = o.colors.length >= 2 ? o.colors : GRADIENT;
    const bar = h('span', { cls: 'jp-Kernelcore-overlayBar', attrs: { role: 'img', 'aria-label': `${o.scale} colour scale` } });
    // styled here, not in the stylesheet: the bar's colours are the overlay's own
    Object.assign(bar.style, { display: 'inline-block', width: '120px', height: '10px', margin: '0 4px', verticalAlign: 'middle', border: '1px solid var(--kc-border1)', background: `linear-gradient(to right, ${stops.join(', ')})` });
    items.push(h('span', { cls: 'jp-Kernelcore-legendItem' }, [
      h('span', { cls: 'jp-Kernelcore-overlayMin', text: formatValue(o.lo) }),
      bar,
      h('span', { cls: 'jp-Kernelcore-overlayMax', text: formatValue(o.hi) }),
      o.scale === 'log' ? logNote(o) : ''
    ]));
  }
  const present = [...o.values.values()];
  if (present.some(x => Number.isNaN(x))) {
    items.push(swatch(NONFINITE.nan, 'NaN'));
  }
  if (present.some(x => x === Infinity)) {
    items.push(swatch(NONFINITE.posInf, '+Inf'));
  }
  if (present.some(x => x === -Infinity)) {
    items.push(swatch(NONFINITE.negInf, '\u2212Inf'));
  }
  items.push(h('span', { cls: 'jp-Kernelcore-muted', text: `${o.values.size} ${o.on}; a folded group shows the ${o.aggregate} of its members` }));
  return h('div', { cls: 'jp-Kernelcore-legend jp-Kernelcore-overlayLegend', attrs: { 'aria-label': 'overlay legend' } }, items);
}

/** The overlay's value of node `id` for its details ({label: value}), or null when it has none. */
export function overlayLine(o: Overlay | null, id: string): Record<string, string> | null {
  const x = o?.values.get(id);
  return o && x !== undefined ? { [o.label]: formatValue(x) } : null;
}
