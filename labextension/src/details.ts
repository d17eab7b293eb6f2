/** Details of a node: what the ProgramJSON itself says, and a generic renderer for what Python says. */
import { formatShape, h, short } from './dom';
import { ProgramGraphModel, UNSUPPORTED_TEXT } from './graph';
import { isValuePreview, renderPreview } from './preview';

/** A JSON-ish value as nested text elements (keys and values via textContent). */
export function renderValue(x: unknown, depth = 0): HTMLElement {
  if (isValuePreview(x)) {
    return renderPreview(x);
  }
  if (x === null || x === undefined || typeof x !== 'object') {
    return h('span', { cls: 'jp-Kernelcore-value', text: x === undefined ? '' : typeof x === 'string' ? x : short(x, 400) });
  }
  if (depth > 4) {
    return h('span', { cls: 'jp-Kernelcore-value', text: short(x, 200) });
  }
  if (Array.isArray(x)) {
    if (x.every(v => v === null || typeof v !== 'object')) {
      return h('span', { cls: 'jp-Kernelcore-value', text: x.length > 64 ? short(x.slice(0, 64)) + ` \u2026 (${x.length})` : x.map(v => String(v)).join(', ') });
    }
    const ul = h('ul', { cls: 'jp-Kernelcore-list' });
    x.slice(0, 200).forEach(v => ul.appendChild(h('li', {}, [renderValue(v, depth + 1)])));
    if (x.length > 200) {
      ul.appendChild(h('li', { text: `\u2026 ${x.length - 200} more` }));
    }
    return ul;
  }
  const dl = h('dl', { cls: 'jp-Kernelcore-kv' });
  for (const [k, v] of Object.entries(x as Record<string, unknown>).slice(0, 200)) {
    dl.appendChild(h('dt', { text: k }));
    dl.appendChild(h('dd', {}, [renderValue(v, depth + 1)]));
  }
  return dl;
}

/** What the program itself says about node `id` (op or var), for views without a kernel. */
export function localDetails(g: ProgramGraphModel, id: string): Record<string, unknown> | null {
  const key = g.byId.get(id);
  const n = key ? g.nodes.get(key) : undefined;
  if (!n) {
    return null;
  }
  const describeVar = (b: number, name: string) => {
    const vk = g.resolveVar(b, name);
    const v = vk ? g.nodes.get(vk)?.v : undefined;
    return { name, shape: v?.shape ?? null, dtype: v?.dtype ?? null };
  };
  if (n.kind === 'op' && n.op) {
    const op = n.op;
    const slots = (m: Record<string, string[]> | undefined) =>
      Object.fromEntries(Object.entries(m ?? {}).map(([slot, names]) => [slot, (names ?? []).map(nm => describeVar(n.block, String(nm)))]));
    const d: Record<string, unknown> = { id: n.id, type: op.type, block: n.block, index: op.idx, role: op.role ?? '' };
    if (op.comment) {
      d.comment = op.comment;
    }
    if (op.unsupported === true) {
      d.kernel = UNSUPPORTED_TEXT;
    }
    d.inputs = slots(op.inputs);
    d.outputs = slots(op.outputs);
    d.attrs = op.attrs ?? {};
    if (op.sub_blocks?.length) {
      d.sub_blocks = op.sub_blocks;
    }
    return d;
  }
  const readers: string[] = [];
  const writers: string[] = [];
  for (const e of g.edges) {
    if (e.kind !== 'data') {
      continue;
    }
    if (e.from === n.key) {
      readers.push(g.nodes.get(e.to)!.id);
    } else if (e.to === n.key) {
      writers.push(g.nodes.get(e.from)!.id);
    }
  }
  const v = n.v;
  return {
    id: n.id,
    name: n.name,
    block: n.block,
    type: v?.type ?? (n.implicit ? '(not declared in any block)' : ''),
    dtype: v?.dtype ?? null,
    shape: v ? formatShape(v.shape ?? []) : '',
    kind: v?.kind ?? 'other',
    persistable: !!v?.persistable,
    parameter: !!v?.parameter,
    written_by: writers,
    read_by: readers
  };
}

const KNOWN_ORDER = ['id', 'type', 'name', 'comment', 'value', 'inputs', 'outputs', 'attrs'];

/** The details panel content for `d` (known keys first, in a fixed order). */
export function renderDetails(d: Record<string, unknown>): HTMLElement {
  const root = h('div', { cls: 'jp-Kernelcore-detailsBody' });
  const keys = Object.keys(d);
  const ordered = [...KNOWN_ORDER.filter(k => keys.includes(k)), ...keys.filter(k => !KNOWN_ORDER.includes(k))];
  for (const k of ordered) {
    const v = d[k];
    if (k === 'comment' && typeof v === 'string') {
      root.appendChild(h('div', { cls: 'jp-Kernelcore-comment', text: v }));
      continue;
    }
    root.appendChild(h('div', { cls: 'jp-Kernelcore-detailRow' }, [h('span', { cls: 'jp-Kernelcore-key', text: k }), renderValue(v, 1)]));
  }
  return root;
}
