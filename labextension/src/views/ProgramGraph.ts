/**
 * ProgramGraph: a program's blocks as a graph laid out by Graphviz (WASM). Sub-blocks are clusters
 * (click a cluster's label to fold it; a folded one is a node you click to unfold); ops are colored by
 * role and vars by kind; a click selects a node (`select` message, Python answers with `details`);
 * search highlights names; wheel zooms, drag pans. With `pruned` the removed parts are greyed, and with
 * a `pruned_program` the two are drawn side by side, a hover lighting the partner on the other side.
 * A big program comes in parts (ProgramJSON 3 `lazy`): a group's ops are fetched when it opens and search
 * runs in the kernel (the `parts` option: the widget's comm, the kernelcore.program comm or the server).
 *
 * The details panel offers debug actions (debugactions.ts): an op's "Break here" / "Run to here", a variable's
 * "Break on write" / "Watch...", sent as `debug` messages and answered in the `debug` trait.
 *
 * An overlay (trait `overlay_spec`, overlay.ts) colours ops or variables by a number each, with a legend.
 *
 * Traits: program, pruned_program, selected, details, search, collapsed, debug, ran, run_diff, overlay_spec.
 * See docs/frontend-contract.md.
 */
import { DebugActions, renderActions, targetOf, WidgetDebugActions } from '../debugactions';
import { button, clear, h, nextTask } from '../dom';
import { localDetails, renderNodeDetails } from '../details';
import { DRAW_LIMIT, EXPAND_BUDGET, ProgramGraphModel, UNSUPPORTED_CLASS, UNSUPPORTED_TEXT } from '../graph';
import { exportButtons, programName } from '../graphexport';
import { GraphPane, HEAT_LEVELS } from '../graphpane';
import { applyOverlay, Overlay, overlayLegend, overlayLine, parseOverlay } from '../overlay';
import { Listeners, RenderProps, setTrait, WidgetModel } from '../model';
import type { ProgramGraphTraits } from '../widgets.generated';
import { ModelPartsSource, PartsSource, RERUN, SearchResult } from '../parts';
import { addGroups, loadedOf, mergeable, mergeContents } from '../skeleton';
import { GroupContentsJSON, GroupJSON, isProgramJSON, ProgramJSON, PrunedJSON } from '../schema';
import { withKernelNotice } from '../restart';

export interface ProgramGraphOptions {
  /** No kernel behind the model: details come from the ProgramJSON only, and no message is sent. */
  local?: boolean;
  /** Where "Break here" / "Run to here" / "Break on write" / "Watch..." go (none: no such actions). */
  debug?: DebugActions | null;
  /**
   * Where a lazy program's group contents and search come from (ProgramJSON version 3 `lazy`). A widget
   * (not `local`) asks its own model by default; a cell result gives the kernel comm; none: a lazy group
   * cannot open (the view says to re-run the cell).
   */
  parts?: PartsSource | null;
}

function idsOf(list: unknown): string[] {
  return Array.isArray(list) ? list.map(x => String(x)) : [];
}

export class ProgramGraphView {
  readonly root: HTMLElement;
  readonly left: GraphPane;
  right: GraphPane | null = null;
  graph: ProgramGraphModel | null = null;
  prunedGraph: ProgramGraphModel | null = null;
  /** Resolves when the latest render has finished. */
  ready: Promise<void> = Promise.resolve();
  private _listeners: Listeners<ProgramGraphTraits>;
  private _search: HTMLInputElement;
  private _count: HTMLElement;
  private _status: HTMLElement;
  private _panes: HTMLElement;
  private _details: HTMLElement;
  /** the `overlay_spec` trait, read (null: no overlay) */
  private _overlay: Overlay | null = null;
  private _overlayHost = h('div', { cls: 'jp-Kernelcore-overlayHost' });
  private _matches: string[] = [];
  private _matchCursor = -1;
  private _current = new Set<string>();
  private _trail = new Set<string>();
  private _hover: { side: 'left' | 'right'; id: string } | null = null;
  private _removed = new Set<string>();
  private _toOrig = new Map<string, string>(); // pruned id -> original id
  private _toPruned = new Map<string, string>(); // original id -> pruned id
  private _programSeen: unknown = undefined;
  private _prunedSeen: unknown = undefined;
  private _rightCollapsed = new Set<string>();
  /** the pruned program beside, when it is sent in parts: its skeleton with what was fetched merged in */
  private _rightMerged: ProgramJSON | null = null;
  private _rightGroups = new Map<string, GroupJSON>();
  private _rightGen = 0;
  /** the kernel's search over every name of the pruned program beside (sent in parts), for the query typed */
  private _rightRemote: { q: string; result: SearchResult | null } | null = null;
  private _awaiting: string | null = null;
  private _quiet = false;
  private _searchTimer: ReturnType<typeof setTimeout> | null = null;
  private _crumbs!: HTMLElement;
  private _note!: HTMLElement;
  private _body!: HTMLElement;
  private _anchor: string | undefined = undefined;
  private _freshView = false;
  /** "Expand all" opens groups while the drawing stays within this many nodes. */
  expandBudget = EXPAND_BUDGET;
  /** A click opens a group only while the drawing stays within this many nodes (graph.ts DRAW_LIMIT). */
  drawLimit = DRAW_LIMIT;
  private _focusAfter: string | null = null;
  private _actions: HTMLElement | null = null;
  private _actionsFor: string | null = null;
  private _offDebug: (() => void) | null = null;
  /** a lazy program: the skeleton with what was fetched merged in (the graph is built from it) */
  private _merged: ProgramJSON | null = null;
  private _groupJSON = new Map<string, GroupJSON>();
  private _parts: PartsSource | null;
  private _ownParts: ModelPartsSource | null = null;
  /** a lazy program's search, answered by the kernel over every name */
  private _remote: { q: string; result: SearchResult | null; promise: Promise<SearchResult | null> } | null = null;
  private _remoteTimer: ReturnType<typeof setTimeout> | null = null;
  private _renderGen = 0;

  constructor(
    readonly model: WidgetModel<ProgramGraphTraits>,
    el: HTMLElement,
    readonly options: ProgramGraphOptions = {}
  ) {
    this._listeners = new Listeners(model);
    if (options.parts !== undefined) {
      this._parts = options.parts;
    } else if (!options.local) {
      this._parts = this._ownParts = new ModelPartsSource(model);
    } else {
      this._parts = null;
    }
    this.root = h('div', { cls: 'jp-Kernelcore-ProgramGraph jp-Kernelcore-view' });
    this._search = h('input', { cls: 'jp-Kernelcore-search', attrs: { type: 'search', placeholder: 'search names', 'aria-label': 'search names' } });
    this._count = h('span', { cls: 'jp-Kernelcore-count' });
    this._status = h('span', { cls: 'jp-Kernelcore-status' });
    const toolbar = h('div', { cls: 'jp-Kernelcore-toolbar' }, [
      this._search,
      this._count,
      button('Fit', () => this.panes().forEach(p => p.fit()), { cls: 'jp-Kernelcore-fit', title: 'fit the graph in view where labels stay readable (again: all of it)' }),
      button('+', () => this.panes().forEach(p => p.zoom(0.8)), { title: 'zoom in' }),
      button('\u2212', () => this.panes().forEach(p => p.zoom(1.25)), { title: 'zoom out' }),
      button('Expand all', () => this.expandAll(), { cls: 'jp-Kernelcore-expandAll', title: `unfold groups, outermost first, up to ${EXPAND_BUDGET} nodes at once` }),
      button('Fold all', () => this.foldAll(), { cls: 'jp-Kernelcore-foldAll', title: 'fold every group (stages stay open)' }),
      ...exportButtons(() => this.left, () => programName(this.root, this.graph?.opCount ?? 0), text => this._say(text)),
      this._status
    ]);
    this._crumbs = h('div', { cls: 'jp-Kernelcore-crumbs', attrs: { 'aria-label': 'open groups' } });
    this._note = h('div', { cls: 'jp-Kernelcore-note', attrs: { role: 'status' } });
    this._panes = h('div', { cls: 'jp-Kernelcore-graphPanes' });
    this.left = this._makePane('left');
    this._details = h('div', { cls: 'jp-Kernelcore-details' });
    this._body = h('div', { cls: 'jp-Kernelcore-graphBody' }, [this._panes, this._details]);
    this.root.append(toolbar, this._crumbs, this._note, this._body, this._overlayHost, this._legend());
    el.appendChild(this.root);

    this._search.value = String(model.get('search') ?? '');
    this._search.addEventListener('input', () => {
      if (this._searchTimer) {
        clearTimeout(this._searchTimer);
      }
      this._searchTimer = setTimeout(() => setTrait(model, 'search', this._search.value), 150);
      this._updateMatches(this._search.value);
      this._restyle();
    });
    this._search.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') {
        this.left.canvas.focus(); // back to the graph and its keys
        return;
      }
      if (ev.key === 'Enter' && this.graph?.lazy && this._remote) {
        void this._nextRemote(ev.shiftKey ? -1 : 1);
        return;
      }
      if (ev.key === 'Enter' && this._matches.length && this.graph) {
        const step = ev.shiftKey ? -1 : 1;
        this._matchCursor = (this._matchCursor + step + this._matches.length) % this._matches.length;
        const n = this.graph.nodes.get(this._matches[this._matchCursor]);
        if (n) {
          this._count.textContent = `${this._matchCursor + 1} of ${this._matches.length}`;
          this.reveal(n.id);
        }
      }
    });

    this._listeners.onChange(['program', 'pruned_program'], () => (this.ready = this._rebuild()));
    this._listeners.onChange(['collapsed'], () => {
      if (!this._quiet) {
        this.ready = this._renderLeft();
      }
    });
    this._listeners.onChange(['search'], () => {
      const q = String(model.get('search') ?? '');
      if (this._search.value !== q) {
        this._search.value = q;
      }
      this._updateMatches(q);
      this._restyle();
    });
    this._listeners.onChange(['selected'], () => {
      this._restyle();
      this._showDetails();
    });
    this._listeners.onChange(['details'], () => this._showDetails());
    this._listeners.onChange(['ran', 'run_diff'], () => this._restyle());
    this._listeners.onChange(['overlay_spec'], () => this._showOverlay());
    this._readOverlay();
    const debug = options.debug;
    if (debug) {
      this._offDebug = debug.onChange(() => this._renderActions());
    }
    this.ready = this._rebuild();
  }

  /** The debug actions of the node whose details are shown (none for the pruned side's own nodes). */
  private _renderActions(): void {
    const debug = this.options.debug;
    if (!debug || !this._actions) {
      return;
    }
    const g = this.graph;
    const id = this._actionsFor;
    const nameOf = (nid: string) => {
      const key = g?.byId.get(nid);
      return key ? g?.nodes.get(key)?.name ?? null : null;
    };
    renderActions(this._actions, debug, id && g?.byId.has(id) ? targetOf(id, nameOf) : null);
  }

  panes(): GraphPane[] {
    return this.right ? [this.left, this.right] : [this.left];
  }

  /** Select node `id` of `program` as a click would. */
  select(id: string): void {
    this._awaiting = id;
    setTrait(this.model, 'selected', id);
    if (!this.options.local) {
      this.model.send({ type: 'select', id });
    }
    this._showDetails();
  }

  /** Mark the ops the debugger stands at. */
  /** Ops to outline as a provenance trail (the writers a value came from); empty clears it. */
  setTrail(ids: Iterable<string>): void {
    this._trail = new Set(ids);
    this._restyle();
  }

  setCurrent(ids: Iterable<string>): void {
    this._current = new Set(ids);
    this._restyle();
  }

  private _makePane(side: 'left' | 'right'): GraphPane {
    const pane = new GraphPane(side === 'right' ? 'pruned' : undefined);
    pane.onSelect = id => {
      if (side === 'left') {
        this.select(id);
      } else {
        const orig = this._toOrig.get(id);
        if (orig) {
          this.select(orig);
        } else {
          this._awaiting = null;
          this._renderDetailsFor(this.prunedGraph, id, null);
        }
      }
    };
    pane.onToggle = cid => {
      if (side === 'left') {
        const cur = new Set(idsOf(this.model.get('collapsed')));
        if (cur.has(cid)) {
          if (this._tooBig(this.graph, cur, cid)) {
            return;
          }
          cur.delete(cid);
        } else {
          cur.add(cid);
        }
        this._say(''); // what a refused click or "Expand all" said no longer holds
        this._anchor = cid; // keep what was clicked where it was on screen
        this._setCollapsed([...cur]);
      } else {
        if (this._rightCollapsed.has(cid)) {
          if (this._tooBig(this.prunedGraph, this._rightCollapsed, cid)) {
            return;
          }
          this._rightCollapsed.delete(cid);
        } else {
          this._rightCollapsed.add(cid);
        }
        this.ready = this._renderRight();
      }
    };
    pane.onHover = id => {
      this._hover = id ? { side, id } : null;
      this._restyle();
    };
    pane.onSearchKey = () => this._search.focus();
    pane.onClearKey = () => this._clearSearchAndSelection();
    this._panes.appendChild(pane.el);
    return pane;
  }

  /**
   * Would opening `cid` take `g`'s drawing past the draw limit? Then it stays folded and the note says what
   * to do instead: past that many nodes an SVG drawing makes the page stall (measured).
   */
  private _tooBig(g: ProgramGraphModel | null, collapsed: Set<string>, cid: string): boolean {
    const after = g ? g.countIfOpened(collapsed, cid) : 0;
    if (!g || after <= this.drawLimit || after <= g.visibleCount(collapsed)) {
      return false;
    }
    const label = g.clusters.get(cid)?.label ?? cid;
    this._say(`\u201c${label}\u201d stays folded: opened, the drawing would hold ${after.toLocaleString('en-US')} nodes, ` +
      `more than ${this.drawLimit.toLocaleString('en-US')} can be drawn and stay smooth. Fold other groups first (Fold all), or search.`);
    return true;
  }

  private _setCollapsed(list: string[]): void {
    setTrait(this.model, 'collapsed', list);
  }

  /** "Fold all": every group folded but the stages, and the view back at the top of the drawing. */
  foldAll(): void {
    this._freshView = true;
    this._say('');
    this._setCollapsed(this.graph?.foldAllCollapsed() ?? []);
  }

  /** "Expand all": open folded groups outermost first while the drawing stays within EXPAND_BUDGET nodes. */
  expandAll(): void {
    const g = this.graph;
    if (!g) {
      return;
    }
    if (g.lazy) {
      this.ready = this._expandAllLazy();
      return;
    }
    const cur = new Set(idsOf(this.model.get('collapsed')));
    const r = g.expandWithin(cur, this.expandBudget);
    if (r.left === 0) {
      this._say(r.opened ? '' : 'everything is open');
    } else {
      const total = g.totalNodes;
      this._say(
        `Opened ${r.opened} group${r.opened === 1 ? '' : 's'}; ${r.left} stay folded: all of this program is ${total.toLocaleString()} nodes, ` +
          `more than ${this.expandBudget} can be drawn at once and stay readable. Open groups one by one, or search.`
      );
    }
    if (r.opened) {
      this._freshView = true; // the drawing changes wholesale: start from its top, not the old view box
      this._setCollapsed([...r.collapsed]);
    }
  }

  /**
   * "Expand all" in a lazy program: an unfetched group's kids are known only once it is fetched, so open
   * level by level (fetching each level's groups), within the budget, and lay out once at the end.
   */
  private async _expandAllLazy(): Promise<void> {
    let cur = new Set(idsOf(this.model.get('collapsed')));
    let opened = 0;
    for (let round = 0; round < 16 && this.graph; round++) {
      const r = this.graph.expandWithin(cur, this.expandBudget);
      if (!r.opened) {
        break;
      }
      opened += r.opened;
      cur = r.collapsed;
      const need = this.graph.unloadedOpen(cur);
      if (!need.size) {
        break;
      }
      this._status.textContent = `loading ${[...need.values()].flat().length} groups\u2026`;
      try {
        const fresh = await this._fetch(need, () => false);
        fresh?.forEach(id => cur.add(id));
      } catch (err) {
        need.forEach(list => list.forEach(id => cur.add(id)));
        this._say(`Could not open every group: ${String((err as Error)?.message ?? err)}`);
        break;
      }
    }
    const g = this.graph;
    if (!g) {
      return;
    }
    const left = g.expandWithin(cur, 0).left;
    if (left === 0) {
      this._say(opened ? '' : 'everything is open');
    } else {
      this._say(
        `Opened ${opened} group${opened === 1 ? '' : 's'}; ${left} stay folded: all of this program is ${g.totalNodes.toLocaleString()} nodes, ` +
          `more than ${this.expandBudget} can be drawn at once and stay readable. Open groups one by one, or search.`
      );
    }
    if (opened) {
      this._freshView = true;
      this._setCollapsed([...cur]);
      await this.ready;
    }
  }

  /** Open the groups around program id `id` (for a node of a lazy program not fetched yet: around its
   * innermost `group`), lay out, and zoom to it. */
  reveal(id: string, group?: string | null, path?: string[], described?: Record<string, GroupJSON>): void {
    let g = this.graph;
    if (!g) {
      return;
    }
    // a search hit in groups this view does not know yet: add them (the kernel described them), to open
    let added = false;
    if (!g.byId.has(id) && group && !g.clusters.has(group) && path && described && this._merged) {
      const m = /^[ov](\d+):/.exec(id);
      const blk = m ? this._merged.blocks.find(b => b.idx === Number(m[1])) : undefined;
      const missing = path.filter(p => !g!.clusters.has(p)).map(p => described[p]).filter(Boolean);
      if (blk && missing.length) {
        addGroups(blk, missing, this._groupJSON);
        this.graph = g = new ProgramGraphModel(this._merged);
        added = true;
      }
    }
    const cur = new Set(idsOf(this.model.get('collapsed')));
    const around = !g.byId.has(id) && group && g.clusters.has(group) ? g.ancestors(group) : g.pathOf(id).map(p => p.id);
    const closed = around.filter(c => cur.has(c));
    if (closed.length === 0 && added) {
      this._focusAfter = id;
      this.ready = this._renderLeft();
      return;
    }
    if (closed.length === 0) {
      this.left.zoomTo(id);
      this._focus(id);
      return;
    }
    closed.forEach(c => cur.delete(c));
    this._focusAfter = id;
    this._setCollapsed([...cur]);
  }

  private _focus(id: string): void {
    this.left.applyClasses({ removed: this._removed, prunedGroups: this._prunedGroups(), matches: new Set(this._matches), selected: String(this.model.get('selected') ?? ''), current: this._current });
    this._crumbsFor(id);
  }

  /** Escape in a graph: no search, nothing selected. */
  private _clearSearchAndSelection(): void {
    if (this._search.value) {
      this._search.value = '';
      this._search.dispatchEvent(new Event('input'));
    }
    if (this.model.get('selected')) {
      setTrait(this.model, 'selected', '');
    }
  }

  private _say(text: string): void {
    this._note.textContent = text;
    this._note.classList.toggle('jp-Kernelcore-hidden', !text);
  }

  /** Breadcrumbs: the groups around `id` (a node's program id or a group id); a click zooms to one. */
  private _crumbsFor(id: string | null): void {
    clear(this._crumbs);
    const g = this.graph;
    if (!g || !id) {
      return;
    }
    const path = g.pathOf(id);
    const blockOf = /^[ov](\d+):/.exec(id);
    const items: HTMLElement[] = [h('span', { cls: 'jp-Kernelcore-crumb jp-Kernelcore-muted', text: `block ${blockOf ? blockOf[1] : g.clusters.get(id)?.block ?? 0}` })];
    for (const p of path) {
      items.push(h('span', { cls: 'jp-Kernelcore-crumbSep', text: '\u203a' }));
      items.push(button(p.label, () => this._zoomToGroup(p.id), { cls: 'jp-Kernelcore-crumb', title: 'show this group' }));
    }
    if (g.byId.has(id)) {
      items.push(h('span', { cls: 'jp-Kernelcore-crumbSep', text: '\u203a' }));
      items.push(h('span', { cls: 'jp-Kernelcore-crumb jp-Kernelcore-crumbHere', text: g.nodes.get(g.byId.get(id)!)!.name }));
    }
    this._crumbs.append(...items);
  }

  private _zoomToGroup(cid: string): void {
    const cur = new Set(idsOf(this.model.get('collapsed')));
    const g = this.graph;
    if (!g) {
      return;
    }
    const closed = g.ancestors(g.clusters.get(cid)?.parent ?? null).filter(c => cur.has(c));
    if (closed.length) {
      closed.forEach(c => cur.delete(c));
      this._focusAfter = cid;
      this._setCollapsed([...cur]);
    } else {
      this.left.zoomTo(cid);
    }
  }

  /** The groups pruning emptied or thinned (a program in parts says so per group). */
  private _prunedGroups(): Map<string, 'all' | 'some'> | undefined {
    const groups = this._pruned()?.groups;
    return groups ? new Map(Object.entries(groups)) : undefined;
  }

  private _pruned(): PrunedJSON | null {
    if (this._merged) {
      return this._merged.pruned ?? null; // a program in parts: what the answers so far said
    }
    const p = this.model.get('program') as ProgramJSON | null;
    const q = this.model.get('pruned_program') as ProgramJSON | null;
    return (p && p.pruned) || (q && q.pruned) || null;
  }

  private async _rebuild(): Promise<void> {
    const program = this.model.get('program');
    const pruned = this.model.get('pruned_program');
    if (!isProgramJSON(program) && !(program && typeof program === 'object' && typeof (program as ProgramJSON).dot === 'string')) {
      this.graph = null;
      this.left.dispose();
      clear(this.left.canvas);
      this.left.canvas.appendChild(h('div', { cls: 'jp-Kernelcore-empty', text: 'no program' }));
      return;
    }
    if (program !== this._programSeen) {
      const pj = program as ProgramJSON;
      this._merged = pj.lazy ? mergeable(pj) : null;
      this._groupJSON.clear();
      this._merged?.blocks.forEach(b => (b.groups ?? []).forEach(gr => this._groupJSON.set(gr.id, gr)));
      this._remote = null;
      this.graph = new ProgramGraphModel(this._merged ?? pj);
      this._programSeen = program;
      // A new program whose clusters `collapsed` does not name starts with the big ones folded.
      const valid = idsOf(this.model.get('collapsed')).filter(id => this.graph!.clusters.has(id));
      if (valid.length === 0) {
        const defaults = this.graph.defaultCollapsed();
        if (defaults.length) {
          this._quiet = true; // rendered below, not by the change listener
          try {
            this._setCollapsed(defaults);
          } finally {
            this._quiet = false;
          }
        }
      }
    }
    if (pruned !== this._prunedSeen) {
      this._prunedSeen = pruned;
      if (isProgramJSON(pruned)) {
        const pj = pruned as ProgramJSON;
        this._rightMerged = pj.lazy ? mergeable(pj) : null;
        this._rightRemote = null;
        this._rightGroups.clear();
        this._rightMerged?.blocks.forEach(b => (b.groups ?? []).forEach(gr => this._rightGroups.set(gr.id, gr)));
        this.prunedGraph = new ProgramGraphModel(this._rightMerged ?? pj);
        this._rightCollapsed = new Set(this.prunedGraph.defaultCollapsed());
        if (!this.right) {
          this.right = this._makePane('right');
          this._panes.classList.add('jp-Kernelcore-sideBySide');
        }
      } else {
        this.prunedGraph = null;
        this._rightMerged = null;
        if (this.right) {
          this.right.dispose();
          this.right.el.remove();
          this.right = null;
          this._panes.classList.remove('jp-Kernelcore-sideBySide');
        }
      }
    }
    this._computePartners();
    this._updateMatches(String(this.model.get('search') ?? this._search.value ?? ''));
    if (this.graph && this.graph.clusters.size > 2000) {
      await nextTask(); // a big model was just built: its DOT is the next task
    }
    await Promise.all([this._renderLeft(), this._renderRight()]);
    this._showDetails();
  }

  private _computePartners(): void {
    const pr = this._pruned();
    this._removed = new Set([...idsOf(pr?.removed_ops), ...idsOf(pr?.removed_vars)]);
    this._toOrig.clear();
    this._toPruned.clear();
    if (!pr || !this.prunedGraph || !this.graph) {
      return;
    }
    const blockMap = new Map<number, number>();
    for (const [nid, oid] of Object.entries(pr.kept_map ?? {})) {
      this._toOrig.set(nid, String(oid));
      this._toPruned.set(String(oid), nid);
      const nb = /^o(\d+):/.exec(nid);
      const ob = /^o(\d+):/.exec(String(oid));
      if (nb && ob) {
        blockMap.set(Number(nb[1]), Number(ob[1]));
      }
    }
    // Variables: the same name in the mapped block.
    this.prunedGraph.nodes.forEach(n => {
      if (n.kind !== 'var') {
        return;
      }
      const ob = blockMap.get(n.block) ?? n.block;
      const key = this.graph!.resolveVar(ob, n.name);
      const orig = key ? this.graph!.nodes.get(key)?.id : undefined;
      if (orig && !this._removed.has(orig)) {
        this._toOrig.set(n.id, orig);
        this._toPruned.set(orig, n.id);
      }
    });
  }

  /**
   * A lazy program: fetch the contents of the groups `collapsed` leaves open and in view that are not here
   * yet, merge them and rebuild the graph. Returns the folded set to draw (groups that could not be fetched
   * stay folded, and the note says why), or null when a newer render started meanwhile.
   */
  private async _ensureLoaded(collapsed: Set<string>, gen: number): Promise<Set<string> | null> {
    const g = this.graph;
    if (!g || !g.lazy) {
      return collapsed;
    }
    const need = g.unloadedOpen(collapsed);
    if (need.size === 0) {
      return collapsed;
    }
    const ids = [...need.values()].flat();
    const label = ids.length === 1 ? `\u201c${g.clusters.get(ids[0])?.label ?? ids[0]}\u201d` : `${ids.length} groups`;
    this._status.textContent = `loading ${label}\u2026`;
    this.root.classList.add('jp-Kernelcore-loading');
    let failure: string | null = null;
    let out = collapsed;
    try {
      const fresh = await this._fetch(need, () => gen !== this._renderGen);
      if (fresh === null) {
        return null;
      }
      // the opened groups' kids are known now: they start folded
      out = new Set([...collapsed, ...fresh]);
      if (fresh.length) {
        this._quiet = true;
        try {
          this._setCollapsed([...out]);
        } finally {
          this._quiet = false;
        }
      }
      await nextTask();
    } catch (err) {
      failure = String((err as Error)?.message ?? err);
    } finally {
      this.root.classList.remove('jp-Kernelcore-loading');
    }
    if (failure === null) {
      return out;
    }
    this._say(`Could not open ${label}: ${failure}`);
    const back = new Set(collapsed);
    ids.forEach(id => back.add(id));
    this._quiet = true;
    try {
      this._setCollapsed([...back]);
    } finally {
      this._quiet = false;
    }
    return back;
  }


  /**
   * Fetch the contents of `need` (block -> group ids), merge them and rebuild the graph. Returns the ids of
   * the groups that became known (to start folded), or null when `stale()` says a newer render started.
   */
  private async _fetch(need: Map<number, string[]>, stale: () => boolean): Promise<string[] | null> {
    if (!this._parts) {
      throw new Error(`this output holds only the outline of a big program; ${RERUN}`);
    }
    const parts = this._parts;
    const replies = await Promise.all([...need].map(([b, list]) => parts.contents(b, list, [...loadedOf(this._merged, b), ...list])));
    if (stale()) {
      return null;
    }
    const fresh: string[] = [];
    replies.forEach(r => fresh.push(...this._mergeContents(r)));
    await nextTask();
    if (stale()) {
      return null;
    }
    this.graph = new ProgramGraphModel(this._merged!);
    this.left.graph = this.graph; // the same drawing refined: keep the view where it is
    return fresh;
  }

  /** Merge one contents answer (and what pruning removed from it); returns the groups that became known. */
  private _mergeContents(r: GroupContentsJSON): string[] {
    const fresh = this._merged ? mergeContents(this._merged, this._groupJSON, r) : null;
    if (fresh === null) {
      return [];
    }
    const pr = this._merged?.pruned;
    if (pr && r.pruned) {
      const ops = idsOf(r.pruned.removed_ops);
      const vars = idsOf(r.pruned.removed_vars);
      pr.removed_ops.push(...ops);
      pr.removed_vars.push(...vars);
      Object.assign((pr.groups ??= {}), r.pruned.groups ?? {});
      ops.forEach(id => this._removed.add(id));
      vars.forEach(id => this._removed.add(id));
    }
    return fresh;
  }

  private async _renderLeft(): Promise<void> {
    if (!this.graph) {
      return;
    }
    const gen = ++this._renderGen;
    const loaded = await this._ensureLoaded(new Set(idsOf(this.model.get('collapsed'))), gen);
    if (loaded === null || gen !== this._renderGen) {
      return;
    }
    const collapsed = loaded;
    this._status.textContent = 'laying out\u2026';
    const anchor = this._anchor;
    this._anchor = undefined;
    const focus = this._focusAfter;
    this._focusAfter = null;
    const fresh = this._freshView;
    this._freshView = false;
    const done = await this.left.show(this.graph, collapsed, anchor, fresh);
    if (!done) {
      return; // superseded by a newer layout (or failed: the pane says why)
    }
    this._status.textContent = this._summary();
    this._restyle();
    if (focus) {
      this.left.zoomTo(focus);
      this._crumbsFor(focus);
    } else if (anchor) {
      this._crumbsFor(anchor);
    }
  }

  /**
   * The pruned program beside, sent in parts: fetch the groups its pane shows open but lacks (asking with
   * pane "pruned"), merge them, rebuild its graph; their kids start folded. A failed fetch leaves those
   * groups folded and the note says why. False when a newer render started.
   */
  private async _loadRight(gen: number): Promise<boolean> {
    const g = this.prunedGraph;
    const merged = this._rightMerged;
    if (!g || !merged || !g.lazy) {
      return true;
    }
    const need = g.unloadedOpen(this._rightCollapsed);
    if (need.size === 0) {
      return true;
    }
    try {
      if (!this._parts) {
        throw new Error(`this output holds only the outline of a big program; ${RERUN}`);
      }
      const parts = this._parts;
      const replies = await Promise.all([...need].map(([b, list]) => parts.contents(b, list, [...loadedOf(merged, b), ...list], 'pruned')));
      if (gen !== this._rightGen || merged !== this._rightMerged) {
        return false;
      }
      replies.forEach(r => (mergeContents(merged, this._rightGroups, r) ?? []).forEach(id => this._rightCollapsed.add(id)));
      this.prunedGraph = new ProgramGraphModel(merged);
      this._computePartners();
      return true;
    } catch (err) {
      [...need.values()].flat().forEach(id => this._rightCollapsed.add(id)); // drawn folded again
      this._say(`Could not open the pruned program's groups: ${String((err as Error)?.message ?? err)}`);
      return gen === this._rightGen;
    }
  }

  private async _renderRight(): Promise<void> {
    if (!this.right || !this.prunedGraph) {
      return;
    }
    const gen = ++this._rightGen;
    if (!(await this._loadRight(gen)) || gen !== this._rightGen || !this.right || !this.prunedGraph) {
      return;
    }
    await this.right.show(this.prunedGraph, this._rightCollapsed);
    this._restyle();
  }

  private _summary(): string {
    const g = this.graph;
    if (!g) {
      return '';
    }
    const ops = g.opCount;
    const pr = this._pruned();
    const pruned = pr ? `, ${pr.counts?.ops ?? idsOf(pr.removed_ops).length} ops pruned` : '';
    return `${g.blocks.size} block${g.blocks.size === 1 ? '' : 's'}, ${ops} ops, ${g.totalNodes - ops} vars${pruned}`;
  }

  private _updateMatches(q: string): void {
    this._matches = this.graph ? this.graph.search(q) : [];
    this._matchCursor = -1;
    this._count.textContent = q.trim() ? `${this._matches.length} match${this._matches.length === 1 ? '' : 'es'}` : '';
    if (this.graph?.lazy) {
      this._remoteSearch(q);
    }
  }

  /** A lazy program: search every name on the kernel side (the fetched nodes' matches show meanwhile). */
  private _remoteSearch(q: string): void {
    const query = q.trim();
    if (this._remote?.q === query) {
      return;
    }
    if (this._remoteTimer) {
      clearTimeout(this._remoteTimer);
    }
    if (!query || !this._parts) {
      this._remote = null;
      this._rightRemote = null;
      return;
    }
    const parts = this._parts;
    let start: () => void = () => undefined;
    const begun = new Promise<void>(res => (start = res));
    if (this.prunedGraph?.lazy) {
      // the pane beside searches its own program's names (its groups' ids are its own)
      const beside: { q: string; result: SearchResult | null } = { q: query, result: null };
      this._rightRemote = beside;
      begun
        .then(() => parts.search(query, 'pruned'))
        .then(
          r => {
            if (this._rightRemote === beside) {
              beside.result = r;
              this._restyle();
            }
          },
          () => undefined // the main pane's search says what failed
        );
    }
    const entry: { q: string; result: SearchResult | null; promise: Promise<SearchResult | null> } = {
      q: query,
      result: null,
      promise: begun.then(() =>
        parts.search(query).then(
          r => r,
          err => {
            this._say(`search: ${String((err as Error)?.message ?? err)}`);
            return null;
          }
        )
      )
    };
    this._remote = entry;
    entry.promise.then(r => {
      if (this._remote !== entry || !r) {
        return;
      }
      entry.result = r;
      this._matchCursor = -1;
      const more = r.total > r.hits.length ? ` (first ${r.hits.length})` : '';
      this._count.textContent = `${r.total} match${r.total === 1 ? '' : 'es'}${more}`;
      this._restyle();
    });
    this._remoteTimer = setTimeout(start, 150);
  }

  /** Enter in a lazy program's search: the next (or previous) hit, its groups opened (fetched). */
  private async _nextRemote(step: number): Promise<void> {
    const entry = this._remote;
    if (!entry) {
      return;
    }
    if (this._remoteTimer) {
      clearTimeout(this._remoteTimer);
      this._remoteTimer = null;
    }
    const r = entry.result ?? (await (async () => {
      // start at once: Enter does not wait for the typing pause
      const parts = this._parts;
      if (!parts) {
        return null;
      }
      try {
        entry.result = await parts.search(entry.q);
      } catch (err) {
        this._say(`search: ${String((err as Error)?.message ?? err)}`);
        return null;
      }
      return entry.result;
    })());
    if (!r || !r.hits.length || this._remote !== entry) {
      return;
    }
    this._matchCursor = (this._matchCursor + step + r.hits.length) % r.hits.length;
    const hit = r.hits[this._matchCursor];
    this._count.textContent = `${this._matchCursor + 1} of ${r.total}`;
    this.reveal(hit.id, hit.group, hit.path, r.groups);
  }

  /** Search hits of a lazy program in pane `pane`: node keys drawn, and the folded groups around hits not drawn. */
  private _remoteMarks(g: ProgramGraphModel | null, r: SearchResult | null | undefined, pane: GraphPane): { keys: Set<string>; clusters: Set<string> } {
    const keys = new Set<string>();
    const clusters = new Set<string>();
    if (!g || !r) {
      return { keys, clusters };
    }
    const collapsed = pane.collapsed;
    for (const hit of r.hits) {
      const key = g.byId.get(hit.id);
      if (key) {
        keys.add(key);
      } else {
        // the innermost group around the hit that this view knows (an unknown one sits in it, folded)
        const chain = hit.path ?? (hit.group ? [hit.group] : []);
        const near = [...chain].reverse().find(p => g.clusters.has(p));
        const c = near ? g.collapsedAround(near, collapsed) ?? near : null;
        if (c) {
          clusters.add(c);
        }
      }
    }
    return { keys, clusters };
  }

  private _restyle(): void {
    const selected = String(this.model.get('selected') ?? '');
    const leftPartner = new Set<string>();
    const rightPartner = new Set<string>();
    if (this._hover) {
      if (this._hover.side === 'left') {
        const p = this._toPruned.get(this._hover.id);
        if (p) {
          rightPartner.add(p);
        }
      } else {
        const o = this._toOrig.get(this._hover.id);
        if (o) {
          leftPartner.add(o);
        }
      }
    }
    // a selected backward op lights the forward op it differentiates (ProgramJSON v2 `forward`)
    const selKey = this.graph?.byId.get(selected);
    const fwd = selKey ? this.graph?.nodes.get(selKey)?.op?.forward : undefined;
    const twin = typeof fwd === 'string' ? new Set([fwd]) : new Set<string>();
    const remote = this._remoteMarks(this.graph, this._remote?.result, this.left);
    this.left.applyClasses({
      removed: this._removed,
      prunedGroups: this._prunedGroups(),
      matches: new Set([...this._matches, ...remote.keys]),
      matchClusters: remote.clusters,
      selected,
      current: this._current,
      partner: leftPartner,
      twin,
      trail: this._trail,
      ...runOverlay(this.graph, this.model.get('ran'), this.model.get('run_diff'))
    });
    applyOverlay(this.left, this.graph, this._overlay);
    if (this.right && this.prunedGraph) {
      const q = this._search.value;
      const sel = this._toPruned.get(selected);
      const beside = this._rightRemote?.q === q.trim() ? this._rightRemote.result : null;
      const far = this._remoteMarks(this.prunedGraph, beside, this.right);
      this.right.applyClasses({
        matches: new Set([...this.prunedGraph.search(q), ...far.keys]),
        matchClusters: far.clusters,
        selected: sel,
        partner: rightPartner
      });
    }
  }

  private _showDetails(): void {
    const selected = String(this.model.get('selected') ?? '');
    if (selected) {
      this._crumbsFor(selected);
    }
    if (!selected) {
      clear(this._details);
      return;
    }
    const details = this.model.get('details');
    const fromPython =
      !this.options.local && details && typeof details === 'object' && Object.keys(details).length > 0 && (details.id === undefined ? this._awaiting !== selected : String(details.id) === selected)
        ? (details as Record<string, unknown>)
        : null;
    const run = runLine(this.model.get('ran'), this.model.get('run_diff'), selected);
    this._renderDetailsFor(this.graph, selected, fromPython && run ? { ...fromPython, ...run } : fromPython ?? null, overlayLine(this._overlay, selected));
  }

  private _renderDetailsFor(g: ProgramGraphModel | null, id: string, fromPython: Record<string, unknown> | null, value: Record<string, string> | null = null): void {
    clear(this._details);
    const local = g ? localDetails(g, id) : null;
    const source = fromPython ? 'from Python' : this.options.local ? 'from the program (no kernel)' : 'from the program';
    this._details.appendChild(h('div', { cls: 'jp-Kernelcore-detailsHead' }, [h('b', { text: id }), h('span', { cls: 'jp-Kernelcore-muted', text: `  ${source}` })]));
    if (this.options.debug) {
      this._actions = h('div', { cls: 'jp-Kernelcore-debugActions' });
      this._actionsFor = g === this.graph ? id : null;
      this._details.appendChild(this._actions);
      this._renderActions();
    }
    const d = (fromPython ?? local) ? { ...(fromPython ?? local), ...value } : null;
    if (d) {
      const onSelect = (nid: string) => {
        if (g === this.graph) {
          this.select(nid);
          this.reveal(nid);
        }
      };
      this._details.appendChild(renderNodeDetails(d, g, onSelect));
    } else {
      this._details.appendChild(h('div', { cls: 'jp-Kernelcore-muted', text: 'not in this program' }));
    }
  }

  /** The overlay trait changed: its legend, the nodes' colours, the selected node's value. */
  private _showOverlay(): void {
    this._readOverlay();
    this._restyle();
    this._showDetails();
  }

  private _readOverlay(): void {
    this._overlay = parseOverlay(this.model.get('overlay_spec'));
    clear(this._overlayHost);
    if (this._overlay) {
      this._overlayHost.appendChild(overlayLegend(this._overlay));
    }
  }

  private _legend(): HTMLElement {
    const item = (cls: string, text: string) => h('span', { cls: 'jp-Kernelcore-legendItem' }, [h('span', { cls: ['jp-Kernelcore-swatch', cls] }), text]);
    return h('div', { cls: 'jp-Kernelcore-legend' }, [
      item('jp-Kernelcore-role-forward', 'op'),
      item('jp-Kernelcore-role-backward', 'backward op'),
      item('jp-Kernelcore-role-optimize', 'optimizer op'),
      item('jp-Kernelcore-kind-data', 'data'),
      item('jp-Kernelcore-kind-param', 'parameter'),
      item('jp-Kernelcore-kind-grad', 'gradient'),
      item('jp-Kernelcore-kind-tmp', 'temporary'),
      item('jp-Kernelcore-pruned', 'pruned away'),
      item(UNSUPPORTED_CLASS, UNSUPPORTED_TEXT)
    ]);
  }

  dispose(): void {
    this._listeners.dispose();
    this._offDebug?.();
    this._offDebug = null;
    if (this._searchTimer) {
      clearTimeout(this._searchTimer);
    }
    if (this._remoteTimer) {
      clearTimeout(this._remoteTimer);
    }
    this._ownParts?.dispose();
    this.panes().forEach(p => p.dispose());
    this.root.remove();
  }
}

/** anywidget entry point. */
async function render({ model, el }: RenderProps<ProgramGraphTraits>): Promise<() => void> {
  const view = new ProgramGraphView(model, el, { debug: new WidgetDebugActions(model) });
  await view.ready;
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };

/** The "what ran" overlay of a run (traits `ran`: op id -> {runs, ns, timesteps}; `run_diff`: op id -> the
 * largest difference of its outputs from another run): ops that never ran, a heat level by time, ops whose
 * outputs differ. Nothing when no run is shown. */
export function runOverlay(
  graph: ProgramGraphModel | null,
  ran: unknown,
  runDiff: unknown
): { notRun?: Set<string>; heat?: Map<string, number>; differs?: Set<string> } {
  const r = ran && typeof ran === 'object' ? (ran as Record<string, { runs?: number; ns?: number }>) : {};
  const d = runDiff && typeof runDiff === 'object' ? Object.keys(runDiff as object) : [];
  if (!graph || (Object.keys(r).length === 0 && d.length === 0)) {
    return {};
  }
  const notRun = new Set<string>();
  const heat = new Map<string, number>();
  if (Object.keys(r).length) {
    const most = Math.max(1, ...Object.values(r).map(x => Number(x?.ns ?? 0)));
    graph.nodes.forEach(n => {
      if (!n.op) {
        return;
      }
      const run = r[n.id];
      if (!run) {
        notRun.add(n.id);
      } else {
        heat.set(n.id, Math.max(1, Math.ceil((HEAT_LEVELS * Number(run.ns ?? 0)) / most)));
      }
    });
  }
  return { notRun, heat, differs: new Set(d) };
}

/** What the shown run did with op `id`, for its details ({} when no run is shown). */
export function runLine(ran: unknown, runDiff: unknown, id: string): Record<string, string> | null {
  const r = ran && typeof ran === 'object' ? (ran as Record<string, { runs?: number; ns?: number; timesteps?: number }>)[id] : undefined;
  const d = runDiff && typeof runDiff === 'object' ? (runDiff as Record<string, { var?: string; max_abs?: unknown }>)[id] : undefined;
  if (!ran || typeof ran !== 'object' || Object.keys(ran as object).length === 0) {
    return d ? { differs: `${String(d.var ?? '')}: max |diff| ${String(d.max_abs)}` } : null;
  }
  const out: Record<string, string> = {
    ran: r ? `${r.runs} time${r.runs === 1 ? '' : 's'}${r.timesteps ? ` in ${r.timesteps} timesteps` : ''}, ${((r.ns ?? 0) / 1e6).toFixed(3)} ms` : 'not in the last run'
  };
  if (d) {
    out.differs = `${String(d.var ?? '')}: max |diff| ${String(d.max_abs)}`;
  }
  return out;
}