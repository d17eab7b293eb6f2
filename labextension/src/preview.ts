/**
 * A ValuePreview drawn: a header, stats, and a small canvas (heatmap of the sample, or a sparkline). A heat
 * map has a colour scale under it: the sample's finite min and max (the range its colours span, which may be
 * narrower than the whole value's), and 0's place when the range straddles it.
 */
import { colorLegend, RAMP_GRADIENT, rampColor } from './colorramp';
import { formatNumber, formatShape, h } from './dom';
import { SampleValue, ValuePreview } from './schema';

export function isValuePreview(x: unknown): x is ValuePreview {
  return !!x && typeof x === 'object' && 'dtype' in (x as object) && 'shape' in (x as object) && 'kind' in (x as object);
}

/** A sample cell as a number: "NaN"/"Infinity"/"-Infinity" strings and null become NaN/+-Inf. */
export function sampleNumber(v: SampleValue | string | null | unknown): number {
  if (typeof v === 'number') {
    return v;
  }
  if (v === 'Infinity' || v === 'inf') {
    return Infinity;
  }
  if (v === '-Infinity' || v === '-inf') {
    return -Infinity;
  }
  if (typeof v === 'string' && v.trim() !== '' && isFinite(Number(v))) {
    return Number(v);
  }
  return NaN;
}

/** The sample as rows of numbers (a flat sample is one row). */
export function sampleRows(p: ValuePreview): number[][] {
  const s = Array.isArray(p.sample) ? p.sample : [];
  if (s.length === 0) {
    return [];
  }
  if (!Array.isArray(s[0])) {
    return [(s as unknown as SampleValue[]).map(sampleNumber)];
  }
  return (s as SampleValue[][]).map(r => (Array.isArray(r) ? r.map(sampleNumber) : [sampleNumber(r as SampleValue)]));
}

/** The finite min and max of the rows, or null when none is finite. */
export function sampleRange(rows: number[][]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const r of rows) {
    for (const v of r) {
      if (isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
  }
  return lo <= hi ? [lo, hi] : null;
}

function finiteRange(rows: number[][]): [number, number] {
  return sampleRange(rows) ?? [0, 0];
}

/** The heat map's colour scale: the ramp from the sample's finite min to its max (none when nothing is finite). */
export function previewLegend(rows: number[][]): HTMLElement | null {
  const range = sampleRange(rows);
  if (!range) {
    return null;
  }
  return colorLegend(range[0], range[1], rampColor, {
    cls: 'jp-Kernelcore-previewLegend',
    gradient: RAMP_GRADIENT,
    markZero: true,
    title: "colour scale of the sample: its finite min and max (magenta: NaN, white: +Inf, black: −Inf)"
  });
}

function drawHeatmap(canvas: HTMLCanvasElement, rows: number[][]): void {
  const nr = rows.length;
  const nc = Math.max(1, ...rows.map(r => r.length));
  const cell = Math.max(4, Math.min(18, Math.floor(160 / Math.max(nr, nc))));
  canvas.width = nc * cell;
  canvas.height = nr * cell;
  const ctx = canvas.getContext?.('2d');
  if (!ctx) {
    return; // no canvas here (a test DOM): the element still stands for the picture
  }
  const [lo, hi] = finiteRange(rows);
  rows.forEach((r, i) =>
    r.forEach((v, j) => {
      ctx.fillStyle = isNaN(v) ? '#ff00ff' : !isFinite(v) ? (v > 0 ? '#ffffff' : '#000000') : rampColor(hi > lo ? (v - lo) / (hi - lo) : 0.5);
      ctx.fillRect(j * cell, i * cell, cell, cell);
    })
  );
}

function drawSparkline(canvas: HTMLCanvasElement, values: number[]): void {
  canvas.width = 200;
  canvas.height = 40;
  const ctx = canvas.getContext?.('2d');
  if (!ctx || values.length === 0) {
    return;
  }
  const [lo, hi] = finiteRange([values]);
  const y = (v: number) => 36 - (hi > lo ? ((v - lo) / (hi - lo)) * 32 : 16);
  const x = (i: number) => (values.length === 1 ? 100 : 4 + (i * 192) / (values.length - 1));
  ctx.strokeStyle = '#1976d2';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let pen = false;
  values.forEach((v, i) => {
    if (!isFinite(v)) {
      pen = false;
      ctx.fillStyle = '#ff00ff';
      ctx.fillRect(x(i) - 1, 2, 2, 36);
      return;
    }
    if (pen) {
      ctx.lineTo(x(i), y(v));
    } else {
      ctx.moveTo(x(i), y(v));
      pen = true;
    }
  });
  ctx.stroke();
}

/** The element for a ValuePreview. */
export function renderPreview(p: ValuePreview): HTMLElement {
  const root = h('div', { cls: 'jp-Kernelcore-preview' });
  root.appendChild(h('div', { cls: 'jp-Kernelcore-previewHead', text: `${String(p.dtype)}${formatShape(p.shape)} on ${String(p.place ?? '?')}` }));
  const stats = h('div', { cls: 'jp-Kernelcore-stats' });
  const stat = (k: string, v: unknown, bad = false) =>
    stats.appendChild(h('span', { cls: ['jp-Kernelcore-stat', bad ? 'jp-Kernelcore-bad' : ''] }, [h('b', { text: k }), ` ${formatNumber(v)}`]));
  if (p.kind !== 'scalar') {
    stat('min', p.min);
    stat('max', p.max);
    stat('mean', p.mean);
    stat('std', p.std);
  }
  stat('NaN', p.nan ?? 0, (p.nan ?? 0) > 0);
  stat('Inf', p.inf ?? 0, (p.inf ?? 0) > 0);
  root.appendChild(stats);
  const rows = sampleRows(p);
  if (p.kind === 'scalar') {
    const v = rows.length ? rows[0][0] : p.min;
    root.appendChild(h('div', { cls: 'jp-Kernelcore-scalar', text: formatNumber(v) }));
  } else if (rows.length) {
    const canvas = h('canvas', { cls: `jp-Kernelcore-${p.kind === 'sparkline' ? 'sparkline' : 'heatmap'}` });
    canvas.setAttribute('data-kind', p.kind === 'sparkline' ? 'sparkline' : 'heatmap');
    if (p.kind === 'sparkline') {
      drawSparkline(canvas, rows.flat());
    } else {
      drawHeatmap(canvas, rows);
    }
    root.appendChild(canvas);
    const legend = p.kind === 'sparkline' ? null : previewLegend(rows);
    if (legend) {
      root.appendChild(legend);
    }
  }
  return root;
}
