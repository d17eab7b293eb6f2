/**
 * One laid-out program graph: renders a ProgramGraphModel through Graphviz (WASM), maps the SVG back
 * to program ids, and handles zoom (wheel), pan (drag), fit, clicks and hovers.
 */
import { clear, h, nextTask } from './dom';
import { ProgramGraphModel, UNSUPPORTED_CLASS, UNSUPPORTED_TEXT } from './graph';
import { GraphKeyAction, graphKeyAction, graphKeyShortcuts } from './graphkeys';
import { keyHelpButton } from './keyhelp';
import { cancelLayout, layoutEngine, LayoutError } from './layout';

let paneCounter = 0;
/** Above this many drawn nodes there is no overview (copying a huge drawing costs more than it shows). */
const MINIMAP_MAX_NODES = 1000;
/** A canvas narrower or lower than this has no overview: the 180x130 px box would cover much of the graph. */
export const MINIMAP_MIN_CANVAS = { width: 540, height: 300 };
/**
 * Opening a group zooms out to show it whole no further than this (screen px per Graphviz point), and
 * zooms in to it from a smaller scale: the opened group's 10pt labels read at 10 CSS px or more.
 */
export const EXPAND_MIN_SCALE = 1;
/** Fit shows the whole graph only where labels stay this readable (screen px per Graphviz point). */
const FIT_MIN = 0.35;
/** A graph opens no smaller than this (screen px per Graphviz point): its 10pt labels read at 11 CSS px. */
export const OPEN_MIN_SCALE = 1.1;
/**
 * Opening and Fit enlarge a small graph no further than this: a few ops (or a program folded to a few
 * groups) are not blown up to fill the canvas with 20-pixel labels.
 */
export const MAX_SCALE = 1.5;

type Box = { x: number; y: number; w: number; h: number };
type Hit = { type: 'node'; id: string } | { type: 'cluster'; cid: string };

export interface PaneClasses {
  removed?: Set<string>;
  /** a program in parts: groups pruning emptied ("all": drawn as removed) or thinned ("some") */
  prunedGroups?: Map<string, 'all' | 'some'>;
  matches?: Set<string>; // node keys
  /** folded groups holding search hits that are not drawn (a lazy program's unfetched ops and vars) */
  matchClusters?: Set<string>;
  selected?: string;
  current?: Set<string>;
  partner?: Set<string>;
  /** the forward op of a selected backward op */
  twin?: Set<string>;
  /** "what ran" overlay: ops the last run never executed (greyed) */
  notRun?: Set<string>;
  /** "what ran" overlay: op id -> heat level 1..4 by the time it took */
  heat?: Map<string, number>;
  /** run diff: ops whose outputs differ between two runs */
  differs?: Set<string>;
  /** a provenance trail: the ops a value came from */
  trail?: Set<string>;
}

export const HEAT_LEVELS = 4;
export const RUN_MARKS = ['jp-Kernelcore-notRun', 'jp-Kernelcore-differs', 'jp-Kernelcore-trail',
  ...Array.from({ length: HEAT_LEVELS }, (_, i) => `jp-Kernelcore-heat${i + 1}`)];

export class GraphPane {
  readonly el: HTMLElement;
  readonly canvas: HTMLElement;
  graph: ProgramGraphModel | null = null;
  svg: SVGSVGElement | null = null;
  /** program id -> the element drawn for it (the node, or the collapsed cluster holding it) */
  readonly nodeEls = new Map<string, Element>();
  /** cluster id -> its element (expanded cluster group or collapsed node) */
  readonly clusterEls = new Map<string, Element>();
  onSelect: (id: string) => void = () => undefined;
  onToggle: (cid: string) => void = () => undefined;
  onHover: (id: string | null) => void = () => undefined;
  /** "/" in the focused canvas: the view's search box takes the focus */
  onSearchKey: () => void = () => undefined;
  /** Escape in the focused canvas: the view clears its search and selection */
  onClearKey: () => void = () => undefined;
  private _hits = new Map<Element, Hit>();
  private _edges: Array<{ el: Element; from: string; to: string }> = [];
  private _prefix: string;
  private _vb0: Box | null = null;
  private _vb: Box | null = null;
  private _gen = 0;
  private _signal: { cancelled: boolean } | null = null;
  private _lastFit: string | null = null;
  /** The overview of the whole drawing with the part in view outlined (shown when not all is in view). */
  readonly minimap: HTMLElement;
  private _miniSvg: SVGSVGElement | null = null;
  private _miniRect: SVGRectElement | null = null;
  /** Milliseconds the last layout took (DOT built, laid out in the worker, parsed, installed). */
  lastLayoutMs = 0;
  private _collapsed = new Set<string>();
  private _drag: { x: number; y: number; moved: boolean; id: number } | null = null;
  private _suppressClick = false;
  /** the group Enter opens or folds: the last one clicked (else the one holding the selected node) */
  private _keyGroup: string | null = null;
  private _selected: string | undefined = undefined;
  /** the view is the opening one (no zoom, pan or fit since): a resize computes it again */
  private _opening = false;
  private _openedAt = '';
  private _resize: ResizeObserver | null = null;

  constructor(title?: string) {
    this._prefix = `kc${++paneCounter}_`;
    this.el = h('div', { cls: 'jp-Kernelcore-graphPane' });
    if (title) {
      this.el.appendChild(h('div', { cls: 'jp-Kernelcore-paneTitle', text: title }));
    }
    this.canvas = h('div', {
      cls: 'jp-Kernelcore-graphCanvas',
      attrs: { tabindex: '0', role: 'application', 'aria-label': 'program graph', 'aria-keyshortcuts': graphKeyShortcuts() }
    });
    this.minimap = h('div', { cls: 'jp-Kernelcore-minimap jp-Kernelcore-hidden', attrs: { 'aria-label': 'overview: click to go there' } });
    const keyHelp = keyHelpButton(() => this.canvas.focus());
    const stage = h('div', { cls: 'jp-Kernelcore-canvasStage' }, [this.canvas, this.minimap, keyHelp.button, keyHelp.panel]);
    this.el.appendChild(stage);
    this.minimap.addEventListener('pointerdown', this._onMini);
    this.minimap.addEventListener('pointermove', ev => {
      if (ev.buttons & 1) {
        this._onMini(ev);
      }
    });
    this.canvas.addEventListener('wheel', this._onWheel, { passive: false });
    this.canvas.addEventListener('pointerdown', this._onPointerDown);
    this.canvas.addEventListener('pointermove', this._onPointerMove);
    this.canvas.addEventListener('pointerup', this._onPointerUp);
    this.canvas.addEventListener('pointercancel', this._onPointerUp);
    this.canvas.addEventListener('click', this._onClick);
    this.canvas.addEventListener('mouseover', this._onOver);
    this.canvas.addEventListener('mouseleave', () => this.onHover(null));
    this.canvas.addEventListener('keydown', this._onKey);
    if (typeof ResizeObserver !== 'undefined') {
      this._resize = new ResizeObserver(() => this._reopen());
      this._resize.observe(this.canvas);
    }
  }

  /** The whole drawing's box in SVG user units (what an export shows), or null before the first layout. */
  get wholeBox(): Box | null {
    return this._vb0 ? { ...this._vb0 } : null;
  }

  get collapsed(): Set<string> {
    return this._collapsed;
  }

  /** Lay out `graph` with `collapsed` folded. Resolves when the SVG is in place (or an error is shown). */
  async show(graph: ProgramGraphModel, collapsed: Set<string>, anchor?: string, fresh = false): Promise<boolean> {
    const gen = ++this._gen;
    const t0 = performance.now();
    // a newer layout of this pane supersedes the one in flight: cancel it (queued: dropped; running: stopped)
    if (this._signal) {
      cancelLayout(this._signal);
    }
    const signal = { cancelled: false };
    this._signal = signal;
    const keepView = !fresh && this.graph === graph && this._vb !== null;
    const before = anchor ? this._screenPos(anchor) : null;
    this.graph = graph;
    this._collapsed = new Set(collapsed);
    let svg: SVGSVGElement;
    try {
      const useDot = graph.nodes.size === 0 && typeof graph.program.dot === 'string' && graph.program.dot.length > 0;
      const dot = useDot ? graph.program.dot! : graph.toDot(this._collapsed, this._prefix);
      svg = await layoutEngine()(dot, { signal });
    } catch (err) {
      if (gen === this._gen && !(err instanceof LayoutError && err.message === 'cancelled')) {
        this.canvas.querySelector(':scope > .jp-Kernelcore-error')?.remove();
        this.canvas.appendChild(h('div', { cls: 'jp-Kernelcore-error', text: `graph layout failed: ${String((err as Error)?.message ?? err)}` }));
      }
      return false;
    }
    if (gen !== this._gen) {
      return false; // a newer render won
    }
    await nextTask(); // what Graphviz gave is parsed; putting it in place is a task of its own
    if (gen !== this._gen) {
      return false;
    }
    this._signal = null;
    this._install(svg, keepView);
    if (anchor) {
      this._keepInView(anchor, before);
    }
    this.lastLayoutMs = performance.now() - t0;
    return true;
  }

  /** The bounding box of `el` in the SVG's own user units (those of its viewBox). */
  private _bboxInSvg(el: SVGGraphicsElement): { x: number; y: number; width: number; height: number } | null {
    const svg = this.svg;
    try {
      const b = el.getBBox();
      const m1 = el.getScreenCTM?.();
      const m0 = svg?.getScreenCTM?.();
      if (!m1 || !m0 || !svg?.createSVGPoint) {
        return null;
      }
      const m = m0.inverse().multiply(m1);
      const pt = svg.createSVGPoint();
      const xs: number[] = [];
      const ys: number[] = [];
      for (const [x, y] of [[b.x, b.y], [b.x + b.width, b.y + b.height]]) {
        pt.x = x;
        pt.y = y;
        const q = pt.matrixTransform(m);
        xs.push(q.x);
        ys.push(q.y);
      }
      return { x: Math.min(...xs), y: Math.min(...ys), width: Math.abs(xs[1] - xs[0]), height: Math.abs(ys[1] - ys[0]) };
    } catch {
      return null;
    }
  }

  /** Zoom and pan so the element drawn for `id` fills a readable part of the view. */
  zoomTo(id: string): void {
    const el = (this.clusterEls.get(id) ?? this.nodeEls.get(id)) as SVGGraphicsElement | undefined;
    const bb = el ? this._bboxInSvg(el) : null;
    const r = this.canvas.getBoundingClientRect();
    if (!bb || !this._vb || !r.width || !r.height) {
      this.centerOn(id);
      return;
    }
    // at least 1.2 px per point (labels readable), at most what shows the whole element with a margin
    const upp = Math.max(Math.min(1 / 1.2, Math.max((bb.width * 1.3) / r.width, (bb.height * 1.3) / r.height)), 1 / 3);
    const w = r.width * upp;
    const hgt = r.height * upp;
    this._vb = { x: bb.x + bb.width / 2 - w / 2, y: bb.y + bb.height / 2 - hgt / 2, w, h: hgt };
    this._applyViewBox();
  }

  /** Where the element drawn for `id` (node or cluster id) is on screen, in canvas pixels. */
  private _screenPos(id: string): [number, number] | null {
    const el = (this.clusterEls.get(id) ?? this.nodeEls.get(id)) as SVGGraphicsElement | undefined;
    if (!el?.getBoundingClientRect) {
      return null;
    }
    const r = el.getBoundingClientRect();
    const c = this.canvas.getBoundingClientRect();
    if (!r.width && !r.height) {
      return null;
    }
    return [r.left + r.width / 2 - c.left, r.top - c.top];
  }

  /**
   * After a re-layout: put what stands for `id` where it was on screen (`before`), or center it. A group
   * just opened is zoomed to show it whole, but at EXPAND_MIN_SCALE or more (zoomed in to that from a
   * smaller scale): a big group shows its top, readable, not the whole of it as a thin strip. Anything
   * else keeps the current scale, or less to show it whole.
   */
  private _keepInView(id: string, before: [number, number] | null): void {
    const el = (this.clusterEls.get(id) ?? this.nodeEls.get(id)) as SVGGraphicsElement | undefined;
    if (!el || !this._vb || !el.getBBox) {
      return;
    }
    const bb = this._bboxInSvg(el);
    if (!bb) {
      this.centerOn(id);
      return;
    }
    const r = this._drawingArea(); // the inside: a border is no part of the scale
    if (!r.width || !r.height || !bb.width) {
      this.centerOn(id);
      return;
    }
    const now = 1 / Math.max(this._vb.w / r.width, this._vb.h / r.height);
    const whole = Math.min(r.width / (bb.width * 1.1), r.height / (bb.height * 1.1));
    const opened = /\bcluster\b/.test(el.getAttribute('class') ?? '');
    const scale = opened ? Math.max(EXPAND_MIN_SCALE, Math.min(now, whole)) : Math.min(now, whole);
    const upp = 1 / scale;
    const w = r.width * upp;
    const [sx, sy] = before ?? [r.width / 2, r.height * 0.15];
    // keep the group's top center at the same screen point when it fits, else its top left
    const cx = bb.x + bb.width / 2;
    let x = cx - sx * upp;
    // its top stays where it was on screen, unless the group then runs out of the bottom: then it moves up
    // (to 8 px from the top at most) so the view holds as much of the group as it can, not empty space above
    const below = r.height - bb.height * scale - 8;
    const top = Math.max(8, Math.min(sy, r.height * 0.5, below));
    const y = bb.y - top * upp;
    if (bb.width > w) {
      x = bb.x - 8 * upp;
    }
    this._vb = { x, y, w: r.width * upp, h: r.height * upp };
    this._applyViewBox();
  }

  private _install(svg: SVGSVGElement, keepView: boolean): void {
    const g = this.graph!;
    clear(this.canvas);
    this.nodeEls.clear();
    this.clusterEls.clear();
    this._hits.clear();
    this._edges = [];
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.setAttribute('width', '100%');
    svg.setAttribute('height', '100%');
    svg.classList.add('jp-Kernelcore-svg');
    const vb = (svg.getAttribute('viewBox') ?? '').split(/[\s,]+/).map(Number);
    this._vb0 = vb.length === 4 && vb.every(isFinite) ? { x: vb[0], y: vb[1], w: vb[2], h: vb[3] } : null;
    const keyOfCollapsed = new Map<string, string>();
    const keyOfCluster = new Map<string, string>();
    g.clusters.forEach((c, cid) => {
      keyOfCollapsed.set(g.collapsedKey(cid), cid);
      keyOfCluster.set(c.key, cid);
    });
    const fromDot = g.nodes.size === 0;
    for (const el of Array.from(svg.querySelectorAll('g'))) {
      const cls = el.getAttribute('class') ?? '';
      if (fromDot) {
        // The Python DOT: node names are the program ids; read them back from <title>.
        if (/\bnode\b/.test(cls)) {
          const id = el.querySelector('title')?.textContent ?? '';
          this.nodeEls.set(id, el);
          this._hits.set(el, { type: 'node', id });
        }
        continue;
      }
      const id = el.getAttribute('id') ?? '';
      if (!id.startsWith(this._prefix)) {
        continue;
      }
      const key = id.slice(this._prefix.length);
      if (/\bnode\b/.test(cls)) {
        const n = g.nodes.get(key);
        if (n) {
          this.nodeEls.set(n.id, el);
          this._hits.set(el, { type: 'node', id: n.id });
          const title = n.classes.includes(UNSUPPORTED_CLASS) ? el.querySelector('title') : null;
          if (title) {
            title.textContent = `${n.name}: ${UNSUPPORTED_TEXT}`; // the browser's tooltip
          }
        } else if (keyOfCollapsed.has(key)) {
          const cid = keyOfCollapsed.get(key)!;
          this.clusterEls.set(cid, el);
          this._hits.set(el, { type: 'cluster', cid });
        }
      } else if (/\bcluster\b/.test(cls) && keyOfCluster.has(key)) {
        const cid = keyOfCluster.get(key)!;
        this.clusterEls.set(cid, el);
        // Only the label toggles an expanded cluster (clicks inside it are for its nodes).
        const label = el.querySelector(':scope > text');
        if (label) {
          label.classList.add('jp-Kernelcore-clusterLabel');
          this._hits.set(label, { type: 'cluster', cid });
        }
      } else if (/\bedge\b/.test(cls)) {
        const t = el.querySelector('title')?.textContent ?? '';
        const [a, b] = t.split('->');
        this._edges.push({ el, from: a ?? '', to: b ?? '' });
      }
    }
    // Nodes hidden in a collapsed cluster are drawn by that cluster's node.
    if (!fromDot) {
      const around = new Map<string | null, Element | undefined>(); // once per container, not per node
      g.nodes.forEach(n => {
        if (!this.nodeEls.has(n.id)) {
          let el = around.get(n.container);
          if (el === undefined && !around.has(n.container)) {
            const cid = g.collapsedAround(n.container, this._collapsed);
            el = cid ? this.clusterEls.get(cid) : undefined;
            around.set(n.container, el);
          }
          if (el) {
            this.nodeEls.set(n.id, el);
          }
        }
      });
    }
    this.svg = svg;
    // the first view needs the node elements (it starts at the program's first op)
    const opening = !keepView || !this._vb;
    if (opening) {
      this._vb = this._initialView();
    }
    this._applyViewBox(svg, opening);
    this.canvas.appendChild(svg);
    // the overview copy is not needed for the first paint: built in a later task
    clear(this.minimap);
    this._miniSvg = null;
    this._miniRect = null;
    this.minimap.classList.add('jp-Kernelcore-hidden');
    const gen = this._gen;
    setTimeout(() => {
      if (gen === this._gen && this.svg === svg) {
        this._buildMinimap(svg);
      }
    }, 50);
  }

  /** Put state classes on the drawn elements. */
  applyClasses(s: PaneClasses): void {
    this._selected = s.selected;
    const g = this.graph;
    if (!this.svg || !g) {
      return;
    }
    const marks = ['jp-Kernelcore-pruned', 'jp-Kernelcore-partPruned', 'jp-Kernelcore-match', 'jp-Kernelcore-selected', 'jp-Kernelcore-current', 'jp-Kernelcore-partner', 'jp-Kernelcore-twin', ...RUN_MARKS];
    this.svg.querySelectorAll('.' + marks.join(', .')).forEach(el => el.classList.remove(...marks));
    const mark = (id: string | undefined, cls: string, onlyOwn = false) => {
      if (!id) {
        return;
      }
      const el = this.nodeEls.get(id);
      if (!el) {
        return;
      }
      const own = this._hits.get(el);
      if (onlyOwn && !(own && own.type === 'node' && own.id === id)) {
        return;
      }
      el.classList.add(cls);
    };
    s.removed?.forEach(id => mark(id, 'jp-Kernelcore-pruned', true));
    s.prunedGroups?.forEach((how, cid) =>
      this.clusterEls.get(cid)?.classList.add(how === 'all' ? 'jp-Kernelcore-pruned' : 'jp-Kernelcore-partPruned')
    );
    s.matches?.forEach(key => mark(g.nodes.get(key)?.id ?? key, 'jp-Kernelcore-match'));
    s.matchClusters?.forEach(cid => this.clusterEls.get(cid)?.classList.add('jp-Kernelcore-match'));
    s.current?.forEach(id => mark(id, 'jp-Kernelcore-current'));
    s.partner?.forEach(id => mark(id, 'jp-Kernelcore-partner'));
    s.twin?.forEach(id => mark(id, 'jp-Kernelcore-twin'));
    s.notRun?.forEach(id => mark(id, 'jp-Kernelcore-notRun', true));
    s.heat?.forEach((level, id) => mark(id, `jp-Kernelcore-heat${level}`, true));
    s.differs?.forEach(id => mark(id, 'jp-Kernelcore-differs'));
    s.trail?.forEach(id => mark(id, 'jp-Kernelcore-trail'));
    mark(s.selected, 'jp-Kernelcore-selected');
    if (s.removed?.size) {
      for (const e of this._edges) {
        const a = g.nodes.get(e.from)?.id;
        const b = g.nodes.get(e.to)?.id;
        if ((a && s.removed.has(a)) || (b && s.removed.has(b))) {
          e.el.classList.add('jp-Kernelcore-pruned');
        }
      }
    }
  }

  // ---- view box: zoom, pan, fit --------------------------------------------------------------------
  private _applyViewBox(svg = this.svg, opening = false): void {
    this._opening = opening;
    this._openedAt = opening ? this._sizeKey() : '';
    if (svg && this._vb) {
      const b = this._vb;
      svg.setAttribute('viewBox', `${b.x} ${b.y} ${b.w} ${b.h}`);
      this._updateMinimap();
    }
  }

  /** A copy of the drawing (no ids, no handlers) at overview scale, and a rectangle for the view. */
  private _buildMinimap(svg: SVGSVGElement): void {
    clear(this.minimap);
    this._miniSvg = null;
    this._miniRect = null;
    const b0 = this._vb0;
    if (!b0 || svg.querySelectorAll('g.node').length > MINIMAP_MAX_NODES) {
      this.minimap.classList.add('jp-Kernelcore-hidden');
      return; // (a copy of a huge drawing costs more than it shows)
    }
    const copy = svg.cloneNode(true) as SVGSVGElement;
    copy.querySelectorAll('[id]').forEach(el => el.removeAttribute('id'));
    copy.querySelectorAll('text, title').forEach(el => el.remove());
    // plain shapes: none of the drawing's classes, so nothing that finds nodes finds these
    copy.querySelectorAll('g[class]').forEach(el => {
      const c = el.getAttribute('class') ?? '';
      el.setAttribute('class', /\bnode\b/.test(c) ? 'jp-Kernelcore-miniNode' : /\bcluster\b/.test(c) ? 'jp-Kernelcore-miniCluster' : 'jp-Kernelcore-miniEdge');
    });
    copy.removeAttribute('id');
    copy.removeAttribute('class');
    copy.setAttribute('viewBox', `${b0.x} ${b0.y} ${b0.w} ${b0.h}`);
    copy.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    copy.classList.add('jp-Kernelcore-miniSvg');
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    rect.setAttribute('class', 'jp-Kernelcore-miniView');
    copy.appendChild(rect);
    this.minimap.appendChild(copy);
    this._miniSvg = copy;
    this._miniRect = rect;
    this._updateMinimap();
  }

  private _updateMinimap(): void {
    const b = this._vb;
    const b0 = this._vb0;
    if (!this._miniRect || !b || !b0) {
      return;
    }
    const all = b.x <= b0.x && b.y <= b0.y && b.x + b.w >= b0.x + b0.w && b.y + b.h >= b0.y + b0.h;
    this.minimap.classList.toggle('jp-Kernelcore-hidden', all || this._cramped());
    this._miniRect.setAttribute('x', String(b.x));
    this._miniRect.setAttribute('y', String(b.y));
    this._miniRect.setAttribute('width', String(b.w));
    this._miniRect.setAttribute('height', String(b.h));
  }

  /** Whether the canvas is too small to give part of it to the overview (an unmeasured one is not). */
  private _cramped(): boolean {
    const r = this.canvas.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && (r.width < MINIMAP_MIN_CANVAS.width || r.height < MINIMAP_MIN_CANVAS.height);
  }

  private _onMini = (ev: PointerEvent) => {
    const mini = this._miniSvg as (SVGSVGElement & { createSVGPoint?: () => DOMPoint }) | null;
    const ctm = mini?.getScreenCTM?.();
    if (!mini || !ctm || !mini.createSVGPoint || !this._vb) {
      return;
    }
    ev.preventDefault();
    ev.stopPropagation();
    const pt = mini.createSVGPoint();
    pt.x = ev.clientX;
    pt.y = ev.clientY;
    const p = pt.matrixTransform(ctm.inverse());
    this._vb.x = p.x - this._vb.w / 2;
    this._vb.y = p.y - this._vb.h / 2;
    this._applyViewBox();
  };

  get viewBox(): Box | null {
    return this._vb ? { ...this._vb } : null;
  }

  /**
   * The whole graph when it fits at a readable scale (OPEN_MIN_SCALE; centered at MAX_SCALE when it would be
   * drawn larger); else, at OPEN_MIN_SCALE, the program's first op near the
   * top and centered across (along an axis that fits: the whole of it). The top-left corner is no anchor:
   * a wide drawing (ResNet's parameters fanned out over its top rank) has only a stray variable there.
   * "Fit" shows it all.
   */
  private _initialView(): Box | null {
    const b0 = this._vb0;
    if (!b0) {
      return null;
    }
    const r = this._drawingArea();
    if (!r.width || !r.height) {
      return { ...b0 };
    }
    const whole = Math.min(r.width / b0.w, r.height / b0.h);
    if (whole > MAX_SCALE) {
      return this._centeredAt(MAX_SCALE, r);
    }
    if (whole >= OPEN_MIN_SCALE) {
      return { ...b0 };
    }
    const w = r.width / OPEN_MIN_SCALE;
    const h = r.height / OPEN_MIN_SCALE;
    const first = this._firstOpAt();
    const within = (lo: number, want: number, size: number, span: number) => Math.max(lo, Math.min(want, lo + span - size));
    return {
      x: b0.w <= w ? b0.x + (b0.w - w) / 2 : first ? within(b0.x, first[0] - w / 2, w, b0.w) : b0.x,
      y: b0.h <= h ? b0.y + (b0.h - h) / 2 : first ? within(b0.y, first[1] - h * 0.15, h, b0.h) : b0.y,
      w,
      h
    };
  }

  /** The canvas's inside (its border excluded: the drawing's scale is the inside's over the view box). */
  private _drawingArea(): { width: number; height: number } {
    const inside = { width: this.canvas.clientWidth, height: this.canvas.clientHeight };
    return inside.width && inside.height ? inside : this.canvas.getBoundingClientRect();
  }

  /** The whole graph at `scale` px per point, centered in a canvas of size `r` that it does not fill. */
  private _centeredAt(scale: number, r: { width: number; height: number }): Box | null {
    const b0 = this._vb0;
    if (!b0) {
      return null;
    }
    const w = r.width / scale;
    const h = r.height / scale;
    return { x: b0.x + (b0.w - w) / 2, y: b0.y + (b0.h - h) / 2, w, h };
  }

  /** Where the program's first drawn op (or the folded group holding it) sits, in SVG user units. */
  private _firstOpAt(): [number, number] | null {
    const g = this.graph;
    if (!g || !this.svg) {
      return null;
    }
    for (const n of g.nodes.values()) {
      const el = n.kind === 'op' ? this.nodeEls.get(n.id) : undefined;
      if (el) {
        return nodeCenter(el, this.svg);
      }
    }
    return null;
  }

  /**
   * Fit: the whole graph when its labels stay readable at that scale (FIT_MIN px per point), at most
   * MAX_SCALE px per point (a small graph centered); else its
   * whole width when that is readable, else its top at a readable scale. Fit again right after: the whole
   * graph whatever the scale.
   */
  fit(): void {
    const b0 = this._vb0;
    if (!b0) {
      return;
    }
    const r = this._drawingArea();
    const whole = Math.min(r.width / b0.w, r.height / b0.h);
    const again = this._lastFit !== null && this._vb !== null && this._lastFit === `${this._vb.x},${this._vb.y},${this._vb.w}`;
    if (r.width && r.height && whole > MAX_SCALE) {
      this._vb = this._centeredAt(MAX_SCALE, r);
    } else if (!r.width || !r.height || whole >= FIT_MIN || again) {
      this._vb = { ...b0 };
    } else if (r.width / b0.w >= FIT_MIN) {
      const k = r.width / b0.w;
      this._vb = { x: b0.x, y: b0.y, w: b0.w, h: r.height / k };
    } else {
      this._vb = this._initialView();
    }
    this._applyViewBox();
    this._lastFit = this._vb ? `${this._vb.x},${this._vb.y},${this._vb.w}` : null;
  }

  /** Back to the opening scale (OPEN_MIN_SCALE, or what shows a small graph whole), around the view's center. */
  resetZoom(): void {
    const opening = this._initialView();
    if (opening && this._vb) {
      this.zoom(opening.w / this._vb.w);
    }
  }

  /** Zoom by `k` (<1 zooms in) around the point (px, py) in SVG user units (default: the center). */
  zoom(k: number, px?: number, py?: number): void {
    const b = this._vb;
    if (!b || !this._vb0) {
      return;
    }
    const maxW = this._vb0.w * 20;
    const minW = Math.min(this._vb0.w, 40) / 4;
    const nk = Math.min(maxW / b.w, Math.max(minW / b.w, k));
    const cx = px ?? b.x + b.w / 2;
    const cy = py ?? b.y + b.h / 2;
    this._vb = { x: cx - (cx - b.x) * nk, y: cy - (cy - b.y) * nk, w: b.w * nk, h: b.h * nk };
    this._applyViewBox();
  }

  pan(dxUser: number, dyUser: number): void {
    if (this._vb) {
      this._vb.x -= dxUser;
      this._vb.y -= dyUser;
      this._applyViewBox();
    }
  }

  /** User units per screen pixel (preserveAspectRatio "meet"). */
  private _unitsPerPx(): number {
    const r = this.canvas.getBoundingClientRect();
    if (!this._vb || !r.width || !r.height) {
      return 1;
    }
    return Math.max(this._vb.w / r.width, this._vb.h / r.height);
  }

  private _toUser(clientX: number, clientY: number): [number, number] | null {
    const svg = this.svg as (SVGSVGElement & { createSVGPoint?: () => DOMPoint }) | null;
    const ctm = svg?.getScreenCTM?.();
    if (!svg || !ctm || !svg.createSVGPoint) {
      return null;
    }
    const pt = svg.createSVGPoint();
    pt.x = clientX;
    pt.y = clientY;
    const p = pt.matrixTransform(ctm.inverse());
    return [p.x, p.y];
  }

  /** Center the view on the element drawn for `id` (when the DOM can measure). */
  centerOn(id: string): void {
    const el = this.nodeEls.get(id) as SVGGraphicsElement | undefined;
    if (!el || !this._vb || !el.getBBox || !el.getScreenCTM) {
      return;
    }
    const bb = el.getBBox();
    const ctm = el.getScreenCTM();
    if (!ctm) {
      return;
    }
    const sx = ctm.a * (bb.x + bb.width / 2) + ctm.c * (bb.y + bb.height / 2) + ctm.e;
    const sy = ctm.b * (bb.x + bb.width / 2) + ctm.d * (bb.y + bb.height / 2) + ctm.f;
    const p = this._toUser(sx, sy);
    if (p) {
      this._vb.x = p[0] - this._vb.w / 2;
      this._vb.y = p[1] - this._vb.h / 2;
      this._applyViewBox();
    }
  }

  private _onWheel = (ev: WheelEvent) => {
    if (!this._vb) {
      return;
    }
    ev.preventDefault();
    const k = Math.exp(Math.max(-1, Math.min(1, ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.002))));
    const p = this._toUser(ev.clientX, ev.clientY);
    this.zoom(k, p?.[0], p?.[1]);
  };

  private _onPointerDown = (ev: PointerEvent) => {
    if (ev.button !== 0) {
      return;
    }
    this._drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
  };

  private _onPointerMove = (ev: PointerEvent) => {
    const d = this._drag;
    if (!d) {
      return;
    }
    const dx = ev.clientX - d.x;
    const dy = ev.clientY - d.y;
    if (!d.moved && Math.hypot(dx, dy) < 4) {
      return;
    }
    if (!d.moved) {
      d.moved = true;
      this.canvas.setPointerCapture?.(d.id);
      this.canvas.classList.add('jp-Kernelcore-panning');
    }
    const u = this._unitsPerPx();
    this.pan(dx * u, dy * u);
    d.x = ev.clientX;
    d.y = ev.clientY;
  };

  private _onPointerUp = () => {
    if (this._drag?.moved) {
      this._suppressClick = true;
      setTimeout(() => (this._suppressClick = false), 0);
    }
    this.canvas.classList.remove('jp-Kernelcore-panning');
    this._drag = null;
  };

  private _hitOf(target: EventTarget | null): Hit | undefined {
    let el = target as Element | null;
    while (el && el !== this.canvas) {
      const hit = this._hits.get(el);
      if (hit) {
        return hit;
      }
      el = el.parentElement ?? (el.parentNode as Element | null);
    }
    return undefined;
  }

  private _onClick = (ev: MouseEvent) => {
    if (this._suppressClick) {
      return;
    }
    const hit = this._hitOf(ev.target);
    if (!hit) {
      return;
    }
    if (hit.type === 'node') {
      this._keyGroup = null;
      this.onSelect(hit.id);
    } else {
      this._keyGroup = hit.cid;
      this.onToggle(hit.cid);
    }
  };

  private _onOver = (ev: MouseEvent) => {
    const hit = this._hitOf(ev.target);
    this.onHover(hit && hit.type === 'node' ? hit.id : null);
  };

  // ---- keys (only while the canvas has the focus: the listener is on it) ----------------------------------
  private _onKey = (ev: KeyboardEvent) => {
    const action = ev.target === this.canvas ? graphKeyAction(ev) : null;
    if (!action || !this._vb) {
      return;
    }
    // the key is the graph's: not the notebook's (command mode's arrows, 0 0, Enter) nor the page's scroll
    ev.preventDefault();
    ev.stopPropagation();
    this.runKey(action);
  };

  /** Do what a graph key does. */
  runKey(action: GraphKeyAction): void {
    const b = this._vb;
    switch (action.kind) {
      case 'pan':
        if (b) {
          this.pan(-action.dx * b.w, -action.dy * b.h);
        }
        break;
      case 'zoom':
        this.zoom(action.factor);
        break;
      case 'reset':
        this.resetZoom();
        break;
      case 'fit':
        this.fit();
        break;
      case 'search':
        this.onSearchKey();
        break;
      case 'toggle': {
        const cid = this._groupForKeys();
        if (cid) {
          this._keyGroup = cid;
          this.onToggle(cid);
        }
        break;
      }
      case 'clear':
        this._keyGroup = null;
        this.onClearKey();
        break;
    }
  }

  /** The group Enter opens or folds: the last one clicked, else the innermost one holding the selected node. */
  private _groupForKeys(): string | null {
    const g = this.graph;
    if (!g) {
      return null;
    }
    if (this._keyGroup && g.clusters.has(this._keyGroup)) {
      return this._keyGroup;
    }
    const key = this._selected ? g.byId.get(this._selected) : undefined;
    return (key ? g.nodes.get(key)?.container : null) ?? null;
  }

  // ---- the opening view follows the canvas's size until the view is moved -----------------------------
  private _sizeKey(): string {
    const r = this._drawingArea();
    return `${Math.round(r.width)}x${Math.round(r.height)}`;
  }

  /**
   * A canvas sized after the drawing was put in it (a pane of the Debugger widget, a cell output not yet
   * attached: no width at first) gets its opening view again at its real size.
   */
  private _reopen(): void {
    if (!this._opening || !this.svg || this._sizeKey() === this._openedAt) {
      return;
    }
    const r = this._drawingArea();
    if (!r.width || !r.height) {
      return;
    }
    this._vb = this._initialView();
    this._applyViewBox(this.svg, true);
  }

  dispose(): void {
    this._resize?.disconnect();
    this._resize = null;
    this._gen++;
    if (this._signal) {
      cancelLayout(this._signal);
    }
    clear(this.canvas);
  }
}

/**
 * The center of a Graphviz node element in its SVG's user units, read from its own geometry (shapes and
 * label anchors) and the root group's transform: no layout query, so it holds before the SVG is shown.
 */
export function nodeCenter(el: Element, svg: SVGSVGElement): [number, number] | null {
  const xs: number[] = [];
  const ys: number[] = [];
  const add = (x: number, y: number) => {
    if (Number.isFinite(x) && Number.isFinite(y)) {
      xs.push(x);
      ys.push(y);
    }
  };
  el.querySelectorAll('text').forEach(t => add(Number(t.getAttribute('x')), Number(t.getAttribute('y'))));
  el.querySelectorAll('ellipse').forEach(e => add(Number(e.getAttribute('cx')), Number(e.getAttribute('cy'))));
  el.querySelectorAll('polygon').forEach(p => {
    const nums = (p.getAttribute('points') ?? '').split(/[\s,]+/).filter(Boolean).map(Number);
    for (let i = 0; i + 1 < nums.length; i += 2) {
      add(nums[i], nums[i + 1]);
    }
  });
  if (!xs.length) {
    return null;
  }
  const [sx, sy, tx, ty] = rootTransform(svg);
  const cx = (Math.min(...xs) + Math.max(...xs)) / 2;
  const cy = (Math.min(...ys) + Math.max(...ys)) / 2;
  return [cx * sx + tx, cy * sy + ty];
}

/** scale and translate of Graphviz's root group (`scale(1 1) rotate(0) translate(4 112)`). */
function rootTransform(svg: SVGSVGElement): [number, number, number, number] {
  const t = svg.querySelector('g.graph')?.getAttribute('transform') ?? '';
  const nums = (name: string) => (t.match(new RegExp(`${name}\\(([^)]*)\\)`))?.[1] ?? '').split(/[\s,]+/).filter(Boolean).map(Number);
  const [sx = 1, sy = sx] = nums('scale');
  const [tx = 0, ty = 0] = nums('translate');
  return [sx, sy, tx, ty];
}
