/**
 * The tensor viewer's edit bar and colour legend. At a pause in the present (`editable`), "Zero", "Replace
 * with" (a notebook variable's name) and a cell editor opened by double-clicking a heat-map cell send
 * `{type: "edit", what: "zero" | "replace" | "cell", ...}`; Python checks each and calls sess.set_value, which
 * forks the run. Nothing is sent until the person presses the button (or Enter) that says what it does.
 * "Copy value" sends `{type: "copy"}`; Python answers `{type: "copied", text}` (a NumPy literal), which goes
 * to the clipboard.
 */
import { button, clear, h } from '../dom';

export type EditMessage =
  | { type: 'edit'; what: 'zero' }
  | { type: 'edit'; what: 'replace'; source: string }
  | { type: 'edit'; what: 'cell'; index: number[]; value: string }
  | { type: 'copy' };

// the legend lives with the colour maps it draws (colorramp.ts); kept here for the views that import it from here
export { colorLegend } from '../colorramp';

/** Writes `text` to the clipboard; where the page may not (an insecure context), shows it selected instead. */
export async function toClipboard(text: string, fallbackBox: HTMLElement): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    clear(fallbackBox);
    return true;
  } catch {
    clear(fallbackBox);
    const area = h('textarea', { cls: 'jp-Kernelcore-tvCopied', attrs: { readonly: 'true', rows: '3', 'aria-label': 'the copied value' } });
    area.value = text;
    fallbackBox.appendChild(area);
    area.select();
    return false;
  }
}

export class EditBar {
  readonly root: HTMLElement;
  readonly cellEditor: HTMLElement;
  private _source: HTMLInputElement;
  private _edits: HTMLElement;

  constructor(private _send: (msg: EditMessage) => void) {
    this._source = h('input', { cls: 'jp-Kernelcore-tvReplaceName', attrs: { type: 'text', placeholder: 'notebook variable', 'aria-label': 'replace with the notebook variable' } });
    this._edits = h('span', { cls: 'jp-Kernelcore-tvEdits' }, [
      button('Zero', () => this._send({ type: 'edit', what: 'zero' }), { cls: 'jp-Kernelcore-tvZero', title: 'set every element to 0 here (the run forks; the trace records it)' }),
      h('span', { cls: 'jp-Kernelcore-muted', text: 'replace with' }),
      this._source,
      button('Replace', () => this._replace(), { cls: 'jp-Kernelcore-tvReplace', title: 'set the value to this notebook variable (same shape; the run forks)' }),
      h('span', { cls: 'jp-Kernelcore-muted', text: 'double-click a cell to edit it' })
    ]);
    this._source.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        this._replace();
      }
    });
    this.root = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-tvEditBar' }, [
      this._edits,
      button('Copy value', () => this._send({ type: 'copy' }), { cls: 'jp-Kernelcore-tvCopy', title: 'copy the value as a NumPy literal' })
    ]);
    this.cellEditor = h('div', { cls: 'jp-Kernelcore-toolbar jp-Kernelcore-tvCellEditor' });
  }

  /** Show or hide the edits (only a paused session's variable in the present can be edited). */
  setEditable(on: boolean): void {
    this._edits.style.display = on ? '' : 'none';
    if (!on) {
      clear(this.cellEditor);
    }
  }

  private _replace(): void {
    const source = this._source.value.trim();
    if (source) {
      this._send({ type: 'edit', what: 'replace', source });
    }
  }

  /** The editor of one cell: its index, its value in a box, Set (or Enter) and Cancel (or Escape). */
  openCell(index: number[], current: string): HTMLInputElement {
    clear(this.cellEditor);
    const box = h('input', { cls: 'jp-Kernelcore-tvCellValue', attrs: { type: 'text', 'aria-label': `new value of [${index.join(', ')}]` } });
    box.value = current;
    const set = () => {
      this._send({ type: 'edit', what: 'cell', index, value: box.value.trim() });
      clear(this.cellEditor);
    };
    box.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        set();
      } else if (ev.key === 'Escape') {
        clear(this.cellEditor);
      }
    });
    this.cellEditor.append(
      h('span', { text: `[${index.join(', ')}] =` }),
      box,
      button('Set', set, { cls: 'jp-Kernelcore-tvCellSet', title: 'set this element here (the run forks; the trace records it)' }),
      button('Cancel', () => clear(this.cellEditor), { cls: 'jp-Kernelcore-tvCellCancel' })
    );
    box.focus();
    box.select();
    return box;
  }
}
