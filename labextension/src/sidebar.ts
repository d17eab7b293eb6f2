/**
 * The "Kernelcore debugger" sidebar: the program or trace of the active notebook's last kernelcore
 * output (application/vnd.kernelcore.program+json or .trace+json in a code cell's outputs; widget
 * outputs are not looked into), redrawn when the notebook changes or a cell runs, plus buttons for the
 * kernelcore:step / next / continue commands and the text they got back from the kernel.
 */
import { Widget } from '@lumino/widgets';
import { button, clear, h } from './dom';
import { Disposable, showProgram, showTrace } from './render';
import { PROGRAM_MIME, TRACE_MIME } from './schema';

export interface FoundOutput {
  mime: string;
  data: unknown;
  cell: number; // index of the cell
}

/** A notebook model as far as we read it: cells with outputs holding MIME bundles. */
export interface NotebookLike {
  cells: { length: number; get(i: number): any };
}

/** The last kernelcore output of a notebook, searching cells from the bottom. */
export function findLastKernelcoreOutput(nb: NotebookLike | null | undefined): FoundOutput | null {
  if (!nb?.cells) {
    return null;
  }
  for (let i = nb.cells.length - 1; i >= 0; i--) {
    const outputs = nb.cells.get(i)?.outputs;
    if (!outputs || typeof outputs.length !== 'number') {
      continue;
    }
    for (let j = outputs.length - 1; j >= 0; j--) {
      const o = outputs.get(j);
      const data = o?.data ?? {};
      for (const mime of [PROGRAM_MIME, TRACE_MIME]) {
        if (data[mime] !== undefined) {
          return { mime, data: data[mime], cell: i };
        }
      }
    }
  }
  return null;
}

export interface SidebarActions {
  run(cmd: 'kernelcore:step' | 'kernelcore:next' | 'kernelcore:continue'): Promise<void>;
}

export class KernelcoreSidebar extends Widget {
  private _source: HTMLElement;
  private _reply: HTMLElement;
  private _host: HTMLElement;
  private _view: Disposable | null = null;
  private _shown: unknown = undefined;
  private _gen = 0;

  constructor(actions: SidebarActions, private _find: () => { name: string; nb: NotebookLike | null } | null) {
    super();
    this.id = 'jp-kernelcore-debugger';
    this.addClass('jp-Kernelcore-sidebar');
    this.title.caption = 'Kernelcore debugger';
    const n = this.node;
    n.appendChild(h('div', { cls: 'jp-Kernelcore-sidebarTitle', text: 'Kernelcore debugger' }));
    n.appendChild(
      h('div', { cls: 'jp-Kernelcore-toolbar' }, [
        button('Step', () => void actions.run('kernelcore:step'), { title: 'kernelcore:step (Accel Shift F11)' }),
        button('Next', () => void actions.run('kernelcore:next'), { title: 'kernelcore:next (Accel Shift F10)' }),
        button('Continue', () => void actions.run('kernelcore:continue'), { title: 'kernelcore:continue (Accel Shift F9)' }),
        button('Refresh', () => this.refresh(true), { title: 'look for the last kernelcore output again' })
      ])
    );
    this._reply = h('pre', { cls: 'jp-Kernelcore-reply' });
    this._source = h('div', { cls: 'jp-Kernelcore-muted' });
    this._host = h('div', { cls: 'jp-Kernelcore-sidebarView' });
    n.append(this._reply, this._source, this._host);
  }

  /** Show what a step command got back. */
  showReply(text: string, error = false): void {
    this._reply.textContent = text;
    this._reply.classList.toggle('jp-Kernelcore-error', error);
  }

  /** Find the active notebook's last kernelcore output and show it (unless it is already shown). */
  refresh(force = false): void {
    if (!this.isVisible && !force) {
      return;
    }
    const cur = this._find();
    const found = cur ? findLastKernelcoreOutput(cur.nb) : null;
    if (!force && found?.data === this._shown && found) {
      return;
    }
    this._shown = found?.data;
    const gen = ++this._gen;
    this._view?.dispose();
    this._view = null;
    clear(this._host);
    if (!cur) {
      this._source.textContent = 'no active notebook';
      return;
    }
    if (!found) {
      this._source.textContent = `${cur.name}: no kernelcore program or trace output yet`;
      return;
    }
    this._source.textContent = `${cur.name}, cell ${found.cell + 1}: ${found.mime === PROGRAM_MIME ? 'program' : 'trace'}`;
    if (found.mime === PROGRAM_MIME) {
      void showProgram(this._host, found.data).then(v => {
        if (gen === this._gen) {
          this._view = v;
        } else {
          v.dispose();
        }
      });
    } else {
      this._view = showTrace(this._host, found.data);
    }
  }

  protected onAfterShow(): void {
    this.refresh();
  }

  dispose(): void {
    this._view?.dispose();
    super.dispose();
  }
}
