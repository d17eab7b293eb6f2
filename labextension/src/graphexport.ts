/**
 * A drawn graph as a file: SVG (self-contained: every element's look resolved from the current theme into
 * inline styles, the whole drawing whatever part is in view, the groups open as they are now) or PNG
 * (that SVG drawn on an offscreen canvas at twice its size, less for a drawing too big for a canvas).
 */
import { button } from './dom';

type Box = { x: number; y: number; w: number; h: number };

const SVG_NS = 'http://www.w3.org/2000/svg';
/** The computed properties that make the drawing look as it does on screen (the stylesheet's rules). */
export const EXPORTED_STYLE = [
  'fill', 'fill-opacity', 'stroke', 'stroke-width', 'stroke-opacity', 'stroke-dasharray', 'opacity',
  'font-family', 'font-size', 'font-weight', 'font-style', 'text-anchor', 'visibility'
] as const;
/** The PNG is drawn at this many pixels per SVG unit (a 2x screen's sharpness). */
export const PNG_SCALE = 2;
/** Browsers refuse canvases past these (Chromium: 32,767 px a side, about 268 M pixels): stay well under. */
export const PNG_MAX_SIDE = 16_384;
export const PNG_MAX_PIXELS = 64 * 1024 * 1024;
/** Below this scale a PNG is unreadable: the SVG is the export for such a drawing. */
export const PNG_MIN_SCALE = 0.25;

export class ExportError extends Error {}

/** The scale a PNG of a `w` x `h` drawing is drawn at, and what the caller should be told when it is less than asked. */
export function pngScale(w: number, h: number): { scale: number; note: string | null } {
  if (!(w > 0 && h > 0)) {
    throw new ExportError('there is no drawing to export');
  }
  const fit = Math.min(PNG_SCALE, PNG_MAX_SIDE / w, PNG_MAX_SIDE / h, Math.sqrt(PNG_MAX_PIXELS / (w * h)));
  if (!(fit >= PNG_MIN_SCALE)) {
    throw new ExportError(
      `the drawing (${Math.round(w)} x ${Math.round(h)} pt) is too big for a readable PNG: export SVG, or fold groups first`
    );
  }
  if (fit < PNG_SCALE) {
    const px = `${Math.floor(w * fit)} x ${Math.floor(h * fit)} px`;
    return { scale: fit, note: `PNG drawn at ${fit.toFixed(2)}x (${px}), the largest a canvas takes; the SVG keeps every detail` };
  }
  return { scale: PNG_SCALE, note: null };
}

/** A file name (no extension) from the program's name: letters, digits, dots, dashes and underscores. */
export function exportName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const stem = base.replace(/\.(pdmodel|json|kcprog)$/i, '').replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '');
  return (stem || 'program').slice(0, 100);
}

/** Where a view says what its program is called (the file viewer sets it to the file's name). */
export const NAME_ATTRIBUTE = 'data-kernelcore-name';

/** The name an export of the view in `root` takes: its host's program name, else one from the op count. */
export function programName(root: Element, opCount: number): string {
  return root.closest(`[${NAME_ATTRIBUTE}]`)?.getAttribute(NAME_ATTRIBUTE) || `program_${opCount}ops`;
}

/** Copy what `from` looks like (its computed style) onto `to` as inline style, element by element. */
function inlineStyles(from: Element, to: Element): void {
  const cs = getComputedStyle(from);
  const style = EXPORTED_STYLE.map(p => [p, cs.getPropertyValue(p)] as const)
    .filter(([, v]) => v !== '')
    .map(([p, v]) => `${p}:${v}`)
    .join(';');
  if (style) {
    to.setAttribute('style', style);
  }
  const a = from.children;
  const b = to.children;
  for (let i = 0; i < a.length && i < b.length; i++) {
    inlineStyles(a[i], b[i]);
  }
}

/**
 * The SVG text of the drawing `svg` (as laid out and styled now), showing all of `whole` (the drawing's
 * own box) at one SVG unit per pixel, on `background`.
 */
export function serializeGraph(svg: SVGSVGElement, whole: Box, background: string): string {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  inlineStyles(svg, copy);
  copy.removeAttribute('style');
  copy.removeAttribute('class');
  copy.setAttribute('xmlns', SVG_NS);
  copy.setAttribute('viewBox', `${whole.x} ${whole.y} ${whole.w} ${whole.h}`);
  copy.setAttribute('width', String(Math.ceil(whole.w)));
  copy.setAttribute('height', String(Math.ceil(whole.h)));
  const bg = copy.ownerDocument.createElementNS(SVG_NS, 'rect');
  for (const [k, v] of [['x', whole.x], ['y', whole.y], ['width', whole.w], ['height', whole.h]] as const) {
    bg.setAttribute(k, String(v));
  }
  bg.setAttribute('fill', background || '#ffffff');
  copy.insertBefore(bg, copy.firstChild);
  return new XMLSerializer().serializeToString(copy);
}

/** The PNG of an SVG text `w` x `h` units big, drawn at `scale` pixels per unit. */
export async function renderPng(svgText: string, w: number, h: number, scale: number): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new ExportError('the browser could not draw the SVG'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.floor(w * scale));
    canvas.height = Math.max(1, Math.floor(h * scale));
    const ctx = canvas.getContext('2d');
    if (!ctx) {
      throw new ExportError('this browser has no 2D canvas to draw the PNG on');
    }
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    const blob = await new Promise<Blob | null>(resolve => canvas.toBlob(resolve, 'image/png'));
    if (!blob) {
      throw new ExportError(`the browser could not encode a ${canvas.width} x ${canvas.height} px PNG`);
    }
    return blob;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Hand `blob` to the browser as a download named `fileName`. */
export function download(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** What an export needs of a graph pane: its drawing, the drawing's whole box, and its canvas (for the theme's background). */
export interface Exportable {
  svg: SVGSVGElement | null;
  readonly wholeBox: Box | null;
  readonly canvas: HTMLElement;
}

/** Export `pane`'s drawing as `format` under `name`; resolves to a note for the user (a capped PNG), or null. */
export async function exportGraph(pane: Exportable, format: 'svg' | 'png', name: string): Promise<string | null> {
  const whole = pane.wholeBox;
  if (!pane.svg || !whole) {
    throw new ExportError('there is no drawing to export yet');
  }
  const text = serializeGraph(pane.svg, whole, getComputedStyle(pane.canvas).backgroundColor);
  const file = exportName(name);
  if (format === 'svg') {
    download(new Blob([text], { type: 'image/svg+xml' }), `${file}.svg`);
    return null;
  }
  const { scale, note } = pngScale(whole.w, whole.h);
  download(await renderPng(text, whole.w, whole.h, scale), `${file}.png`);
  return note;
}

/** The toolbar's "Export SVG" and "Export PNG" buttons for the pane `pane()` returns; `say` tells the user what happened. */
export function exportButtons(pane: () => Exportable | null, name: () => string, say: (message: string) => void): HTMLButtonElement[] {
  const run = (format: 'svg' | 'png') => {
    const p = pane();
    if (!p) {
      return;
    }
    exportGraph(p, format, name()).then(
      note => say(note ?? ''),
      err => say(`export: ${String((err as Error)?.message ?? err)}`)
    );
  };
  return [
    button('Export SVG', () => run('svg'), { cls: 'jp-Kernelcore-exportSvg', title: 'download the whole graph, groups open as now, as an SVG file' }),
    button('Export PNG', () => run('png'), { cls: 'jp-Kernelcore-exportPng', title: 'download the whole graph, groups open as now, as a PNG image (2x)' })
  ];
}

/** The graph canvas that last had the focus (the palette's export commands act on it). */
let lastCanvas: HTMLElement | null = null;
let tracking = false;

/** Follow which graph canvas last had the focus (once per page). */
export function trackGraphFocus(): void {
  if (tracking || typeof document === 'undefined') {
    return;
  }
  tracking = true;
  document.addEventListener('focusin', ev => {
    const el = ev.target as HTMLElement | null;
    if (el?.classList?.contains('jp-Kernelcore-graphCanvas')) {
      lastCanvas = el;
    }
  });
}

/** The export button of the view whose graph last had the focus, while that view is on the page. */
function focusedExportButton(format: 'svg' | 'png'): HTMLButtonElement | null {
  const view = lastCanvas?.isConnected ? lastCanvas.closest('.jp-Kernelcore-ProgramGraph') : null;
  return view?.querySelector<HTMLButtonElement>(`:scope > .jp-Kernelcore-toolbar .jp-Kernelcore-export${format === 'svg' ? 'Svg' : 'Png'}`) ?? null;
}

/** Whether a graph had the focus and is still shown (the palette commands are enabled). */
export function hasFocusedGraph(): boolean {
  return focusedExportButton('svg') !== null;
}

/** Export the graph that last had the focus, as its toolbar button does. */
export function exportFocusedGraph(format: 'svg' | 'png'): void {
  focusedExportButton(format)?.click();
}
