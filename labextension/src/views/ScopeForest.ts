/**
 * ScopeForest: the scope tree of a run (a root scope, its step/branch kid scopes) with each scope's
 * variables. Opening a tensor sends `{type: "open", scope, name}`; Python fills
 * `opened["<scope>:<name>"]` with a ValuePreview, drawn under the variable.
 *
 * Traits: forest (ScopeForest.to_json()), opened. See docs/frontend-contract.md.
 */
import { button, clear, formatShape, h } from '../dom';
import { copyButton, offerCopyMenu } from '../copytext';
import { Listeners, RenderProps, WidgetModel } from '../model';
import type { ScopeForestTraits } from '../widgets.generated';
import { isValuePreview, renderPreview } from '../preview';
import { ForestVarJSON, ScopeForestJSON, ScopeNodeJSON } from '../schema';
import { withKernelNotice } from '../restart';

const KIDS_PAGE = 100;

export interface ScopeForestOptions {
  local?: boolean;
}

export function scopeLabel(n: ScopeNodeJSON): string {
  const o = n.origin ?? {};
  if (!o || Object.keys(o).length === 0) {
    return `scope ${n.id}`;
  }
  const what = String(o.what ?? o.op ?? 'scope');
  const t = o.timestep !== undefined && o.timestep !== null ? ` t=${o.timestep}` : '';
  const made = o.op ? ` (block ${o.block}, op #${o.op_idx} ${String(o.op)})` : '';
  return `scope ${n.id}: ${what}${t}${made}`;
}

export function describeVar(v: ForestVarJSON): string {
  switch (v.kind) {
    case 'tensor':
      return `${v.dtype ?? '?'}${formatShape(v.shape ?? [])} on ${v.place ?? '?'}`;
    case 'step_scopes': {
      const ids = (v.scopes ?? []).slice(0, 8).join(', ') + ((v.scopes ?? []).length > 8 ? ', \u2026' : '');
      return `step scopes [${ids}]`;
    }
    case 'tensor_list':
      return `list of ${(v.shape ?? [0])[0]} tensors`;
    case 'empty':
      return '(no value)';
    case 'list':
      return '[] (empty list)';
    default:
      return String(v.kind);
  }
}

export class ScopeForestView {
  readonly root: HTMLElement;
  private _tree: HTMLElement;
  private _listeners: Listeners<ScopeForestTraits>;
  private _nodes = new Map<number, ScopeNodeJSON>();
  private _expanded = new Set<number>();
  private _shown = new Map<number, number>(); // scope -> how many kids shown
  private _openVars = new Set<string>(); // "<scope>:<name>" shown open
  private _previewEls = new Map<string, HTMLElement>();
  private _highlight: number | null = null;
  private _initialized = false;

  constructor(
    readonly model: WidgetModel<ScopeForestTraits>,
    el: HTMLElement,
    readonly options: ScopeForestOptions = {}
  ) {
    this._listeners = new Listeners(model);
    this.root = h('div', { cls: 'jp-Kernelcore-ScopeForest jp-Kernelcore-view' });
    this._tree = h('div', { cls: 'jp-Kernelcore-tree', attrs: { role: 'tree' } });
    this.root.appendChild(this._tree);
    el.appendChild(this.root);
    this._listeners.onChange(['forest'], () => this.refresh());
    this._listeners.onChange(['opened'], () => this._updatePreviews());
    this.refresh();
  }

  get forest(): ScopeForestJSON | null {
    const f = this.model.get('forest');
    return f && Array.isArray(f.scopes) ? (f as ScopeForestJSON) : null;
  }

  refresh(): void {
    const f = this.forest;
    this._nodes.clear();
    clear(this._tree);
    this._previewEls.clear();
    if (!f) {
      this._tree.appendChild(h('div', { cls: 'jp-Kernelcore-empty', text: 'no scopes' }));
      return;
    }
    f.scopes.forEach(s => this._nodes.set(s.id, s));
    if (!this._initialized) {
      this._initialized = true;
      const small = f.scopes.length <= 50;
      f.scopes.forEach(s => {
        if (s.depth === 0 || (small && s.depth <= 1)) {
          this._expanded.add(s.id);
        }
      });
    }
    const roots = (f.roots ?? []).filter(r => this._nodes.has(r));
    const top = roots.length ? roots : f.scopes.filter(s => s.parent === null || !this._nodes.has(s.parent)).map(s => s.id);
    for (const id of top) {
      this._tree.appendChild(this._renderScope(this._nodes.get(id)!));
    }
    this._updatePreviews();
  }

  /** Expand the ancestors of scope `id`, mark it and scroll it into view. */
  reveal(id: number): void {
    let cur = this._nodes.get(id);
    const seen = new Set<number>();
    while (cur && cur.parent !== null && !seen.has(cur.id)) {
      seen.add(cur.id);
      this._expanded.add(cur.parent);
      const parent = this._nodes.get(cur.parent);
      if (parent) {
        const idx = parent.kids.indexOf(cur.id);
        if (idx >= (this._shown.get(parent.id) ?? KIDS_PAGE)) {
          this._shown.set(parent.id, idx + 1);
        }
      }
      cur = parent;
    }
    this._highlight = id;
    this.refresh();
    const row = this._tree.querySelector('.jp-Kernelcore-highlight');
    (row as HTMLElement | null)?.scrollIntoView?.({ block: 'nearest' });
  }

  private _renderScope(n: ScopeNodeJSON): HTMLElement {
    const open = this._expanded.has(n.id);
    const item = h('div', { cls: 'jp-Kernelcore-scope', attrs: { role: 'treeitem', 'aria-expanded': String(open) } });
    const head = h('div', { cls: ['jp-Kernelcore-scopeHead', this._highlight === n.id ? 'jp-Kernelcore-highlight' : ''] }, [
      h('span', { cls: 'jp-Kernelcore-twisty', text: open ? '\u25be' : '\u25b8' }),
      h('span', { cls: 'jp-Kernelcore-scopeLabel', text: scopeLabel(n) }),
      h('span', { cls: 'jp-Kernelcore-muted', text: `  ${n.vars.length} var${n.vars.length === 1 ? '' : 's'}${n.kids.length ? `, ${n.kids.length} kid${n.kids.length === 1 ? '' : 's'}` : ''}` })
    ]);
    head.addEventListener('click', () => {
      if (this._expanded.has(n.id)) {
        this._expanded.delete(n.id);
      } else {
        this._expanded.add(n.id);
      }
      item.replaceWith(this._renderScope(n));
      this._updatePreviews();
    });
    item.appendChild(head);
    if (!open) {
      return item;
    }
    const body = h('div', { cls: 'jp-Kernelcore-scopeBody', attrs: { role: 'group' } });
    for (const v of n.vars) {
      body.appendChild(this._renderVar(n, v));
    }
    const limit = this._shown.get(n.id) ?? KIDS_PAGE;
    const kids = n.kids.filter(k => this._nodes.has(k));
    kids.slice(0, limit).forEach(k => body.appendChild(this._renderScope(this._nodes.get(k)!)));
    if (kids.length > limit) {
      body.appendChild(
        button(`show ${Math.min(KIDS_PAGE, kids.length - limit)} more of ${kids.length - limit} scopes`, () => {
          this._shown.set(n.id, limit + KIDS_PAGE);
          item.replaceWith(this._renderScope(n));
          this._updatePreviews();
        })
      );
    }
    item.appendChild(body);
    return item;
  }

  private _renderVar(n: ScopeNodeJSON, v: ForestVarJSON): HTMLElement {
    const key = `${n.id}:${v.name}`;
    const row = h('div', { cls: ['jp-Kernelcore-var', `jp-Kernelcore-var-${v.kind === 'tensor' ? 'tensor' : 'other'}`] });
    const line = h('div', { cls: 'jp-Kernelcore-varLine' }, [
      h('span', { cls: 'jp-Kernelcore-varName', text: String(v.name) }),
      copyButton('name', () => String(v.name)),
      h('span', { cls: 'jp-Kernelcore-muted', text: `  ${describeVar(v)}` })
    ]);
    offerCopyMenu(row, String(v.name), () => this._valueText(key, v));
    row.appendChild(line);
    if (v.kind === 'tensor') {
      line.classList.add('jp-Kernelcore-clickable');
      line.title = 'show the value';
      line.addEventListener('click', () => this.toggleVar(n.id, String(v.name)));
    } else if (v.kind === 'step_scopes' && v.scopes?.length) {
      const links = h('span', { cls: 'jp-Kernelcore-scopeLinks' });
      v.scopes.slice(0, 16).forEach(sid => links.appendChild(button(String(sid), () => this.reveal(sid), { title: `reveal scope ${sid}` })));
      line.appendChild(links);
    }
    if (this._openVars.has(key)) {
      const slot = h('div', { cls: 'jp-Kernelcore-previewSlot' });
      this._previewEls.set(key, slot);
      row.appendChild(slot);
    }
    return row;
  }

  /** What "Copy value" copies: the opened preview's JSON when there is one, else the description shown. */
  private _valueText(key: string, v: ForestVarJSON): string {
    const opened = (this.model.get('opened') ?? {}) as Record<string, unknown>;
    return opened[key] ? JSON.stringify(opened[key]) : describeVar(v);
  }

  /** Open (send `open`, show the preview when it comes) or close a variable's value. */
  toggleVar(scope: number, name: string): void {
    const key = `${scope}:${name}`;
    if (this._openVars.has(key)) {
      this._openVars.delete(key);
    } else {
      this._openVars.add(key);
      const opened = this.model.get('opened') ?? {};
      if (!opened[key] && !this.options.local) {
        this.model.send({ type: 'open', scope, name });
      }
    }
    this.refresh();
  }

  private _updatePreviews(): void {
    const opened = (this.model.get('opened') ?? {}) as Record<string, unknown>;
    this._previewEls.forEach((slot, key) => {
      clear(slot);
      const p = opened[key];
      if (isValuePreview(p)) {
        slot.appendChild(renderPreview(p));
      } else if (p && typeof p === 'object' && 'error' in (p as object)) {
        slot.appendChild(h('div', { cls: 'jp-Kernelcore-error', text: String((p as { error: unknown }).error) }));
      } else {
        slot.appendChild(h('div', { cls: 'jp-Kernelcore-muted', text: this.options.local ? 'no kernel: values are not in this output' : 'loading\u2026' }));
      }
    });
  }

  dispose(): void {
    this._listeners.dispose();
    this.root.remove();
  }
}

function render({ model, el }: RenderProps<ScopeForestTraits>): () => void {
  const view = new ScopeForestView(model, el);
  return () => view.dispose();
}

export default { render: withKernelNotice(render) };
