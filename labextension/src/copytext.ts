/**
 * Copying a variable's name or value text from the debugger's panels (the sidebar's Variables, the scope
 * forest): a small button for the name, and a context menu offering the name and the value as shown.
 * The clipboard API needs a secure context and the page's focus; where it is missing or refuses, a hidden
 * text area and the older copy command do it.
 */
import { button, h } from './dom';

export type CopyOutcome = 'copied' | 'failed';

/** Put `text` on the clipboard. */
export async function copyText(text: string, doc: Document = document): Promise<CopyOutcome> {
  const clip = doc.defaultView?.navigator?.clipboard;
  if (clip && typeof clip.writeText === 'function') {
    try {
      await clip.writeText(text);
      return 'copied';
    } catch {
      // not allowed here (no secure context, no focus): the fallback below
    }
  }
  return copyWithTextArea(text, doc);
}

function copyWithTextArea(text: string, doc: Document): CopyOutcome {
  const area = h('textarea', { cls: 'jp-Kernelcore-copyArea', attrs: { readonly: '', 'aria-hidden': 'true' } });
  area.value = text;
  doc.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = typeof doc.execCommand === 'function' && doc.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok ? 'copied' : 'failed';
}

/** A small button copying `text()`; its title says what it copies, then whether the copy worked. */
export function copyButton(what: string, text: () => string, cls = 'jp-Kernelcore-copy'): HTMLButtonElement {
  const b = button('\u29c9', () => {
    void copyText(text()).then(outcome => {
      b.title = outcome === 'copied' ? `copied the ${what}` : `could not copy the ${what}: the browser refused`;
      b.dataset.copied = outcome;
    });
  }, { cls, title: `copy the ${what}` });
  b.setAttribute('aria-label', `copy the ${what}`);
  return b;
}

/** Offer "Copy name" and "Copy value" on `row`'s context menu (a small menu at the pointer). */
export function offerCopyMenu(row: HTMLElement, name: string, value: () => string): void {
  row.addEventListener('contextmenu', ev => {
    ev.preventDefault();
    ev.stopPropagation();
    closeCopyMenus(row.ownerDocument);
    const item = (label: string, text: () => string) =>
      button(label, () => {
        void copyText(text());
        menu.remove();
      }, { cls: 'jp-Kernelcore-copyItem' });
    const menu = h('div', { cls: 'jp-Kernelcore-copyMenu', attrs: { role: 'menu' } }, [item('Copy name', () => name), item('Copy value', value)]);
    menu.style.left = `${ev.clientX}px`;
    menu.style.top = `${ev.clientY}px`;
    row.ownerDocument.body.appendChild(menu);
    const close = (e: Event) => {
      if (!menu.contains(e.target as Node)) {
        menu.remove();
        row.ownerDocument.removeEventListener('mousedown', close, true);
      }
    };
    row.ownerDocument.addEventListener('mousedown', close, true);
  });
}

function closeCopyMenus(doc: Document): void {
  doc.querySelectorAll('.jp-Kernelcore-copyMenu').forEach(m => m.remove());
}
