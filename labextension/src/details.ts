/** Details of a node: what the ProgramJSON itself says, and a generic renderer for what Python says. */
import { button, formatShape, h, short } from './dom';
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
    const d: Record<string, unknown> = { id: n.id, kind: 'op', type: op.type, block: n.block, index: op.idx, role: op.role ?? '' };
    if (op.comment) {
      d.comment = op.comment;
    }
    if (op.unsupported === true) {
      d.kernel = UNSUPPORTED_TEXT;
    }
    if (typeof op.callsite === 'string') {
      d.callsite = op.callsite;
    }
    if (typeof op.forward === 'string') {
      d.forward = op.forward;
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
    kind: 'var',
    var_kind: v?.kind ?? 'other',
    name: n.name,
    block: n.block,
    type: v?.type ?? (n.implicit ? '(not declared in any block)' : ''),
    dtype: v?.dtype ?? null,
    shape: v ? formatShape(v.shape ?? []) : '',
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

type Entry = { name: string; id?: string | null; dtype?: string | null; shape?: unknown };

/**
 * The details side panel for an op or a variable: names one can click (producers, consumers, the
 * variables an op reads and writes, the forward op a backward op differentiates), shapes and dtypes,
 * the OpProto comment and the source line that created the op (Paddle's op_callstack). `d` is what Python
 * sent or what the program itself says (localDetails); keys it does not know are shown after, as a tree.
 */
export function renderNodeDetails(d: Record<string, unknown>, g: ProgramGraphModel | null, onSelect: (id: string) => void): HTMLElement {
  const id = String(d.id ?? '');
  const isOp = d.kind === 'op' || (d.kind === undefined && id.startsWith('o'));
  const isVar = d.kind === 'var' || (d.kind === undefined && id.startsWith('v'));
  if (!isOp && !isVar) {
    return renderDetails(d);
  }
  const root = h('div', { cls: 'jp-Kernelcore-detailsBody' });
  const used = new Set(['id', 'kind', 'error']);
  const take = (k: string) => {
    used.add(k);
    return d[k];
  };
  const nameOf = (nid: string): string => {
    const key = g?.byId.get(nid);
    const n = key ? g?.nodes.get(key) : undefined;
    return n ? n.name : nid;
  };
  const link = (nid: string, text?: string) => {
    const b = button(text ?? nameOf(nid), () => onSelect(nid), { cls: 'jp-Kernelcore-link', title: nid });
    return b;
  };
  const block = Number(d.block ?? /^[ov](\d+):/.exec(id)?.[1] ?? 0);
  const varId = (e: Entry): string | null => {
    if (typeof e.id === 'string' && e.id) {
      return e.id;
    }
    const key = g?.resolveVar(block, e.name);
    return key ? g!.nodes.get(key)!.id : null;
  };
  const section = (title: string) => root.appendChild(h('div', { cls: 'jp-Kernelcore-sectionHead', text: title }));
  const path = (take('layer') as string[] | undefined) ?? g?.pathOf(id).map(p => p.label) ?? [];
  if (isOp) {
    const type = String(take('type') ?? '');
    const role = String(take('role') ?? '');
    const idx = take('idx') ?? take('index');
    take('block');
    root.appendChild(h('div', { cls: 'jp-Kernelcore-detailTitle' }, [h('b', { text: type }), h('span', { cls: 'jp-Kernelcore-muted', text: `  ${role} op #${String(idx ?? '')} of block ${block}` })]));
    if (path.length) {
      root.appendChild(h('div', { cls: 'jp-Kernelcore-muted', text: path.join(' \u203a ') }));
    }
    const comment = take('comment');
    if (typeof comment === 'string' && comment) {
      root.appendChild(h('div', { cls: 'jp-Kernelcore-comment', text: comment }));
    }
    const site = take('callsite');
    if (typeof site === 'string' && site) {
      root.appendChild(h('div', { cls: 'jp-Kernelcore-callsite', text: `created at ${site}`, title: 'from Paddle\u2019s op_callstack' }));
    }
    const fwd = take('forward');
    if (typeof fwd === 'string' && fwd) {
      root.appendChild(h('div', {}, ['differentiates ', link(fwd, `${nameOf(fwd)} (${fwd})`)]));
    }
    for (const dir of ['inputs', 'outputs']) {
      const slots = take(dir) as Record<string, unknown[]> | undefined;
      if (!slots || typeof slots !== 'object') {
        continue;
      }
      section(dir === 'inputs' ? 'reads' : 'writes');
      const table = h('table', { cls: 'jp-Kernelcore-ioTable' });
      for (const [slot, list] of Object.entries(slots)) {
        (Array.isArray(list) ? list : []).forEach((raw, i) => {
          const e: Entry = typeof raw === 'string' ? { name: raw } : (raw as Entry);
          const vid = varId(e);
          const shape = Array.isArray(e.shape) ? `[${(e.shape as unknown[]).join(', ')}]` : typeof e.shape === 'string' ? e.shape : '';
          const row = h('tr', {}, [
            h('td', { cls: 'jp-Kernelcore-slot', text: i === 0 ? slot : '' }),
            h('td', {}, [vid ? link(vid, e.name) : h('span', { text: e.name })]),
            h('td', { cls: 'jp-Kernelcore-shape', text: `${e.dtype ?? ''} ${shape}`.trim() })
          ]);
          table.appendChild(row);
          const value = (raw as Record<string, unknown>)?.value;
          if (value) {
            table.appendChild(h('tr', {}, [h('td'), h('td', { attrs: { colspan: '2' } }, [renderValue(value, 1)])]));
          }
        });
      }
      root.appendChild(table);
    }
  } else {
    const name = String(take('name') ?? '');
    take('block');
    const dtype = take('dtype');
    const shape = take('shape');
    const vkind = take('var_kind') ?? d.kind;
    const shapeText = Array.isArray(shape) ? `[${shape.join(', ')}]` : String(shape ?? '');
    root.appendChild(h('div', { cls: 'jp-Kernelcore-detailTitle' }, [h('b', { text: name }), h('span', { cls: 'jp-Kernelcore-muted', text: `  ${String(dtype ?? '')} ${shapeText}` })]));
    const flags = [String(take('type') ?? ''), typeof vkind === 'string' && vkind !== 'var' ? vkind : '', take('persistable') ? 'persistable' : '', take('parameter') ? 'parameter' : '']
      .filter(Boolean)
      .join(' \u00b7 ');
    root.appendChild(h('div', { cls: 'jp-Kernelcore-muted', text: flags + (path.length ? `  \u2014  ${path.join(' \u203a ')}` : '') }));
    for (const [key, title] of [
      ['written_by', 'produced by'],
      ['read_by', 'consumed by']
    ]) {
      const list = take(key);
      const ids = Array.isArray(list) ? list.map(String) : [];
      section(`${title} (${ids.length})`);
      const box = h('div', { cls: 'jp-Kernelcore-linkList' });
      ids.slice(0, 200).forEach((oid, i) => {
        if (i) {
          box.append(', ');
        }
        box.appendChild(link(oid, `${nameOf(oid)} ${oid.split(':')[1] ? '#' + oid.split(':')[1] : ''}`.trim()));
      });
      if (ids.length > 200) {
        box.append(` \u2026 ${ids.length - 200} more`);
      }
      root.appendChild(box);
    }
  }
  const value = take('value');
  if (value) {
    section('value');
    root.appendChild(renderValue(value, 1));
  }
  const attrs = take('attrs');
  if (attrs && typeof attrs === 'object' && Object.keys(attrs).length) {
    const det = h('details', { cls: 'jp-Kernelcore-attrs' }, [h('summary', { text: `attributes (${Object.keys(attrs).length})` })]);
    det.appendChild(renderValue(attrs, 1));
    root.appendChild(det);
  }
  const rest = Object.fromEntries(Object.entries(d).filter(([k]) => !used.has(k)));
  if (Object.keys(rest).length) {
    const det = h('details', { cls: 'jp-Kernelcore-more', attrs: { open: '' } }, [h('summary', { text: 'more' })]);
    det.appendChild(renderDetails(rest));
    root.appendChild(det);
  }
  return root;
}
