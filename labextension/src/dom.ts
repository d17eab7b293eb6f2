/**
 * DOM helpers. Every string that may come from data goes in through textContent or a text node:
 * nothing in kernelcore parses data as HTML (a unit test checks that no source file uses innerHTML).
 */

export interface ElOptions {
  cls?: string | string[];
  text?: string;
  title?: string;
  attrs?: Record<string, string>;
  onClick?: (ev: MouseEvent) => void;
}

/** An element with classes, text (as a text node) and attributes; children appended in order. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  opts: ElOptions = {},
  children: Array<Node | string | null | undefined | false> = []
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (opts.cls) {
    const classes = Array.isArray(opts.cls) ? opts.cls : opts.cls.split(/\s+/);
    el.classList.add(...classes.filter(Boolean));
  }
  if (opts.text !== undefined) {
    el.textContent = opts.text;
  }
  if (opts.title !== undefined) {
    el.title = opts.title;
  }
  if (opts.attrs) {
    for (const [k, v] of Object.entries(opts.attrs)) {
      if (/^on/i.test(k) || /href|src/i.test(k)) {
        continue; // never from here
      }
      el.setAttribute(k, v);
    }
  }
  if (opts.onClick) {
    el.addEventListener('click', opts.onClick as EventListener);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) {
      continue;
    }
    el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

export function clear(el: Element): void {
  while (el.firstChild) {
    el.removeChild(el.firstChild);
  }
}

export function button(label: string, onClick: () => void, opts: { cls?: string; title?: string } = {}): HTMLButtonElement {
  const b = h('button', {
    cls: ['jp-Kernelcore-button', opts.cls ?? ''],
    text: label,
    title: opts.title,
    attrs: { type: 'button' }
  });
  b.addEventListener('click', ev => {
    ev.stopPropagation();
    onClick();
  });
  return b;
}

/** A short string of any JSON-ish value, for labels (never parsed). */
export function short(x: unknown, max = 80): string {
  let s: string;
  if (typeof x === 'string') {
    s = x;
  } else {
    try {
      s = JSON.stringify(x) ?? String(x);
    } catch {
      s = String(x);
    }
  }
  return s.length > max ? s.slice(0, max - 1) + '\u2026' : s;
}

export function formatShape(shape: unknown): string {
  return Array.isArray(shape) ? `[${shape.join(', ')}]` : '';
}

export function formatNs(ns: number | undefined | null): string {
  if (ns === undefined || ns === null || !isFinite(ns)) {
    return '';
  }
  if (ns < 1e3) {
    return `${ns} ns`;
  }
  if (ns < 1e6) {
    return `${(ns / 1e3).toFixed(ns < 1e4 ? 2 : 1)} \u00b5s`;
  }
  if (ns < 1e9) {
    return `${(ns / 1e6).toFixed(ns < 1e7 ? 2 : 1)} ms`;
  }
  return `${(ns / 1e9).toFixed(2)} s`;
}

/** A number as the views print it: an integer as it is (up to 12 digits), anything else to 4 significant
 * digits, exponential when very large or very small. A float that merely has no fraction (1.7e36, which
 * `Number.isInteger` calls an integer) is not printed with all its 37 digits. */
export function formatNumber(x: unknown): string {
  if (typeof x === 'number') {
    if (Number.isInteger(x) && Math.abs(x) < 1e12) {
      return String(x);
    }
    const a = Math.abs(x);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? x.toExponential(3) : x.toPrecision(4);
  }
  if (x === null || x === undefined) {
    return '\u2013';
  }
  return String(x);
}

const SVG_DROP = new Set(['script', 'foreignobject', 'iframe', 'object', 'embed', 'image', 'use', 'style', 'animate', 'set', 'handler']);

/**
 * Make an SVG produced by Graphviz inert: drop script-like elements, every on* / href / src / style
 * attribute and any attribute value that names a javascript: URL; unwrap <a> elements.
 * The DOT it came from escapes every label already; this is the second fence.
 */
export function sanitizeSvg(root: Element): Element {
  const all = [root, ...Array.from(root.querySelectorAll('*'))];
  for (const el of all) {
    const tag = el.localName.toLowerCase();
    if (SVG_DROP.has(tag)) {
      el.remove();
      continue;
    }
    for (const attr of Array.from(el.attributes)) {
      const name = attr.name.toLowerCase();
      const local = attr.localName.toLowerCase();
      if (
        name.startsWith('on') ||
        local === 'href' ||
        local === 'src' ||
        name === 'style' ||
        /^\s*(javascript|data|vbscript):/i.test(attr.value) ||
        /url\s*\(/i.test(attr.value)
      ) {
        el.removeAttributeNode(attr);
      }
    }
    if (tag === 'a' && el.parentNode) {
      while (el.firstChild) {
        el.parentNode.insertBefore(el.firstChild, el);
      }
      el.remove();
    }
  }
  return root;
}

/**
 * Resolve in a new task (a MessageChannel message: no 4 ms timer clamp), so the browser can paint and take
 * input between the parts of a long piece of work; no main-thread task should run past ~200 ms.
 */
export function nextTask(): Promise<void> {
  return new Promise(resolve => {
    if (typeof MessageChannel === 'undefined') {
      setTimeout(resolve, 0);
      return;
    }
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      resolve();
    };
    ch.port2.postMessage(0);
  });
}
