/**
 * A viewer for program files (.pdmodel, Paddle 1.x's __model__, .kcprog): the file is binary protobuf,
 * so the viewer asks the kernelcore server extension for its ProgramJSON
 * (GET {baseUrl}kernelcore/program?path=<path>) and draws it with the ProgramGraph view.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, IDocumentWidget } from '@jupyterlab/docregistry';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';
import { button, clear, h } from './dom';
import { NAME_ATTRIBUTE } from './graphexport';
import { PartsError, PartsSource, SearchResult } from './parts';
import { Disposable, showProgram } from './render';
import type { GroupContentsJSON } from './schema';

export const PROGRAM_FILE_TYPE = 'kernelcore-program';
export const PROGRAM_FACTORY = 'Kernelcore Program';

export function programUrl(baseUrl: string, path: string): string {
  return `${URLExt.join(baseUrl, 'kernelcore', 'program')}?path=${encodeURIComponent(path)}`;
}

/** A big program file's parts, from the server extension (GET {baseUrl}kernelcore/program/parts). */
export class ServerPartsSource implements PartsSource {
  constructor(
    private _settings: ServerConnection.ISettings,
    private _path: string
  ) {}

  private async _ask(msg: Record<string, unknown>): Promise<any> {
    const url = `${URLExt.join(this._settings.baseUrl, 'kernelcore', 'program', 'parts')}?path=${encodeURIComponent(this._path)}&request=${encodeURIComponent(JSON.stringify(msg))}`;
    let resp: Response;
    try {
      resp = await ServerConnection.makeRequest(url, { method: 'GET' }, this._settings);
    } catch (err) {
      throw new PartsError(`could not reach the server: ${String((err as Error)?.message ?? err)}; reload the file`);
    }
    let body: any = null;
    try {
      body = await resp.json();
    } catch {
      body = null;
    }
    if (!resp.ok || !body || !body.ok) {
      throw new PartsError(String(body?.error ?? body?.message ?? `${resp.status} ${resp.statusText}`));
    }
    return body.result;
  }

  contents(block: number, groups: Array<string | null>, loaded: string[]): Promise<GroupContentsJSON> {
    return this._ask({ type: 'contents', block, groups, loaded });
  }

  search(query: string): Promise<SearchResult> {
    return this._ask({ type: 'search', query });
  }
}

export class ProgramFileView extends Widget {
  private _host: HTMLElement;
  private _status: HTMLElement;
  private _view: Disposable | null = null;

  constructor(
    private _context: DocumentRegistry.Context,
    private _settings: ServerConnection.ISettings
  ) {
    super();
    this.addClass('jp-Kernelcore-fileView');
    this._status = h('span', { cls: 'jp-Kernelcore-status' });
    this._host = h('div', { cls: 'jp-Kernelcore-fileHost' });
    this.node.append(h('div', { cls: 'jp-Kernelcore-toolbar' }, [button('Reload', () => void this.load()), this._status]), this._host);
    void _context.ready.then(() => this.load());
  }

  get path(): string {
    const c = this._context as DocumentRegistry.Context & { localPath?: string };
    return c.localPath ?? c.path;
  }

  async load(): Promise<void> {
    this._view?.dispose();
    this._view = null;
    clear(this._host);
    this._host.setAttribute(NAME_ATTRIBUTE, this.path.split('/').pop() ?? ''); // an export's file name
    this._status.textContent = 'asking the server for the program\u2026';
    let resp: Response;
    try {
      resp = await ServerConnection.makeRequest(programUrl(this._settings.baseUrl, this.path), { method: 'GET' }, this._settings);
    } catch (err) {
      this._fail(`could not reach the server: ${String((err as Error)?.message ?? err)}`);
      return;
    }
    let body: any = null;
    const text = await resp.text();
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    if (!resp.ok) {
      const msg = body && typeof body.message === 'string' ? body.message : text.slice(0, 500) || resp.statusText;
      this._fail(
        resp.status === 404 && !body
          ? `the kernelcore server extension did not answer (${resp.status}); is kernelcore_widgets installed in the Jupyter server's environment?`
          : `${resp.status}: ${msg}`
      );
      return;
    }
    this._status.textContent = '';
    // a big program comes as its skeleton: the server answers for its groups
    const parts = body && body.lazy ? new ServerPartsSource(this._settings, this.path) : null;
    this._view = await showProgram(this._host, body, parts);
  }

  private _fail(message: string): void {
    this._status.textContent = '';
    clear(this._host);
    this._host.appendChild(h('div', { cls: 'jp-Kernelcore-error', text: message }));
  }

  dispose(): void {
    this._view?.dispose();
    super.dispose();
  }
}

export class ProgramFileFactory extends ABCWidgetFactory<IDocumentWidget<ProgramFileView>> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<IDocumentWidget<ProgramFileView>>,
    private _settings: ServerConnection.ISettings
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): IDocumentWidget<ProgramFileView> {
    const content = new ProgramFileView(context, this._settings);
    const widget = new DocumentWidget({ content, context });
    widget.addClass('jp-Kernelcore-programDocument');
    return widget;
  }
}
