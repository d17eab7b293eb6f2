/**
 * The graph's key help: a small "?" button on the canvas that opens a list of the keys a focused graph takes,
 * made from graphkeys.ts's table (a key added there shows here). The list is built when first opened: a page of
 * many graphs pays nothing for help nobody reads.
 */
import { h } from './dom';
import { graphKeyRows } from './graphkeys';

/** The keys as a definition list: each row's keys (<kbd>) and what they do. */
export function keyHelpList(): HTMLElement {
  const list = h('dl', { cls: 'jp-Kernelcore-keyHelpList' });
  for (const row of graphKeyRows()) {
    const keys = h('dt');
    row.keys.forEach((key, i) => {
      if (i) {
        keys.append(' ');
      }
      keys.appendChild(h('kbd', { text: key }));
    });
    list.append(keys, h('dd', { text: row.help }));
  }
  return list;
}

let helpCounter = 0;

/** The "?" button and its (closed) panel; `focusGraph` gives the keyboard back to the graph after a close. */
export function keyHelpButton(focusGraph: () => void): { button: HTMLButtonElement; panel: HTMLElement } {
  const id = `jp-Kernelcore-keyHelp-${++helpCounter}`;
  const panel = h('div', { cls: 'jp-Kernelcore-keyHelp jp-Kernelcore-hidden', attrs: { id, role: 'dialog', 'aria-label': 'keys of the graph' } });
  const toggle = h('button', {
    cls: 'jp-Kernelcore-button jp-Kernelcore-keyHelpButton',
    text: '?',
    title: 'keys of the graph (click the graph first)',
    attrs: { type: 'button', 'aria-expanded': 'false', 'aria-controls': id, 'aria-label': 'keys of the graph' }
  });
  const show = (open: boolean) => {
    if (open && !panel.firstChild) {
      panel.append(h('div', { cls: 'jp-Kernelcore-keyHelpTitle', text: 'With the graph focused (click it, or Tab to it):' }), keyHelpList());
    }
    panel.classList.toggle('jp-Kernelcore-hidden', !open);
    toggle.setAttribute('aria-expanded', String(open));
  };
  toggle.addEventListener('click', ev => {
    ev.stopPropagation();
    show(panel.classList.contains('jp-Kernelcore-hidden'));
  });
  panel.addEventListener('keydown', ev => {
    if (ev.key === 'Escape') {
      ev.stopPropagation();
      show(false);
      focusGraph();
    }
  });
  toggle.addEventListener('keydown', ev => {
    if (ev.key === 'Escape' && toggle.getAttribute('aria-expanded') === 'true') {
      ev.stopPropagation();
      show(false);
    }
  });
  return { button: toggle, panel };
}
