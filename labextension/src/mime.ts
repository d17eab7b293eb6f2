/**
 * The rendermime extension: outputs of type application/vnd.kernelcore.program+json render as the
 * program graph and application/vnd.kernelcore.trace+json as the timeline, with no kernel needed
 * (the same views the widgets use, over a local model). `*.kctrace.json` files open with the timeline.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import { clear } from './dom';
import { Disposable, showProgram, showTrace } from './render';
import { PROGRAM_MIME, TRACE_MIME } from './schema';

/** Below text/html's rank, so a kernelcore bundle shows as the graph, not as its HTML fallback. */
const RANK = 20;

export class KernelcoreRenderer extends Widget implements IRenderMime.IRenderer {
  private _view: Disposable | null = null;

  constructor(private _mimeType: string) {
    super();
    this.addClass('jp-Kernelcore-output');
    this.node.dataset.mimeType = _mimeType; // as JupyterLab's own renderers mark their node
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[this._mimeType];
    this._view?.dispose();
    clear(this.node);
    this._view = this._mimeType === PROGRAM_MIME ? await showProgram(this.node, data) : showTrace(this.node, data);
  }

  dispose(): void {
    this._view?.dispose();
    this._view = null;
    super.dispose();
  }
}

export const programRendererFactory: IRenderMime.IRendererFactory = {
  safe: true, // renders data as text only; runs nothing from it
  mimeTypes: [PROGRAM_MIME],
  defaultRank: RANK,
  createRenderer: options => new KernelcoreRenderer(options.mimeType)
};

export const traceRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [TRACE_MIME],
  defaultRank: RANK,
  createRenderer: options => new KernelcoreRenderer(options.mimeType)
};

const extensions: IRenderMime.IExtension[] = [
  {
    id: '@kernelcore/labextension:program-renderer',
    description: 'Renders kernelcore programs (application/vnd.kernelcore.program+json) as graphs.',
    rendererFactory: programRendererFactory,
    rank: RANK,
    dataType: 'json'
  },
  {
    id: '@kernelcore/labextension:trace-renderer',
    description: 'Renders kernelcore traces (application/vnd.kernelcore.trace+json) as timelines, and opens *.kctrace.json files.',
    rendererFactory: traceRendererFactory,
    rank: RANK,
    dataType: 'json',
    fileTypes: [
      {
        name: 'kernelcore-trace',
        displayName: 'Kernelcore trace',
        mimeTypes: [TRACE_MIME],
        extensions: ['.kctrace.json'],
        fileFormat: 'text'
      }
    ],
    documentWidgetFactoryOptions: {
      name: 'Kernelcore Trace',
      label: 'Kernelcore Trace',
      primaryFileType: 'kernelcore-trace',
      fileTypes: ['kernelcore-trace'],
      defaultFor: ['kernelcore-trace']
    }
  }
];

export default extensions;
