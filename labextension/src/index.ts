/**
 * The JupyterLab plugins of @kernelcore/labextension:
 *  - `:plugin`: a viewer for program files (.pdmodel, __model__, .kcprog) that asks the server extension for
 *    the ProgramJSON and draws the graph; the same viewer for Paddle 3's PIR `.json` programs, offered for
 *    every `.json` and chosen by content when the file browser opens one (pirfile.ts);
 *  - `:debugger-model`: provides IKernelcoreDebuggerModel (tokens.ts): the active notebook kernel's debug
 *    session over the `kernelcore.debugger` comm (messages typed by protocol.generated.ts; no code is executed);
 *  - `:debugger`: the right-sidebar "Kernelcore debugger" panel over that model, a command with its shortcut
 *    for each move of the command table (MOVES: kernelcore:step, kernelcore:next, ...; in notebooks and in
 *    the panel), the same for each control (CONTROLS: kernelcore:pause, enabled only while a move runs),
 *    and kernelcore:run-n / open-debugger / view-tensor / export-graph-svg / export-graph-png;
 *  - `:health`: the left-sidebar "Training health" panel over the kernel's flight recorders (healthplugin.ts).
 * The MIME renderers (outputs and *.kctrace.json files) are the separate mimeExtension in mime.ts.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { followActiveNotebook } from './activekernel';
import { setDebuggerModel } from './debugactions';
import { DebuggerModel } from './debugmodel';
import { PROGRAM_FACTORY, PROGRAM_FILE_TYPE, ProgramFileFactory } from './fileviewer';
import { exportFocusedGraph, hasFocusedGraph, trackGraphFocus } from './graphexport';
import { sharedLayout } from './layout';
import { setKernelLookup } from './parts';
import { IOpeningListing, isPirFile, JSON_FILE_TYPE, PIR_FACTORY, routePirOpenings } from './pirfile';
import { CONTROLS, MOVES } from './protocol';
import { controlEnabled, KernelcoreSidebar } from './sidebar';
import { TensorPanel } from './tensorpanel';
import { IKernelcoreDebuggerModel } from './tokens';
import { healthPlugin } from './healthplugin';

export const PLUGIN_ID = '@kernelcore/labextension:plugin';

export namespace CommandIDs {
  export const openDebugger = 'kernelcore:open-debugger';
  export const runN = 'kernelcore:run-n';
  export const viewTensor = 'kernelcore:view-tensor';
  export const exportGraphSvg = 'kernelcore:export-graph-svg';
  export const exportGraphPng = 'kernelcore:export-graph-png';
}

// A static icon (no data in it): a graph of three nodes.
export const kernelcoreIcon = new LabIcon({
  name: 'kernelcore:debugger',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><g class="jp-icon3" fill="#616161"><circle cx="4" cy="3.5" r="2.2"/><circle cx="12" cy="3.5" r="2.2"/><rect x="5.5" y="10" width="5" height="4" rx="1"/><path d="M4.6 5.5 7.6 10h.8l3-4.5-.9-.6L8 8.8 5.5 4.9z"/></g></svg>'
});

const viewerPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'kernelcore: program file viewer.',
  autoStart: true,
  optional: [IDefaultFileBrowser],
  activate: (app: JupyterFrontEnd, browser: IDefaultFileBrowser | null) => {
    const settings = app.serviceManager.serverSettings;

    // Program files: binary protobuf, drawn from the server's ProgramJSON.
    app.docRegistry.addFileType({
      name: PROGRAM_FILE_TYPE,
      displayName: 'Program (kernelcore)',
      extensions: ['.pdmodel', '.kcprog'],
      pattern: '^__model__$',
      mimeTypes: ['application/octet-stream'],
      contentType: 'file',
      fileFormat: 'base64',
      icon: kernelcoreIcon
    });
    app.docRegistry.addWidgetFactory(
      new ProgramFileFactory(
        {
          name: PROGRAM_FACTORY,
          label: 'Kernelcore Program',
          modelName: 'base64',
          fileTypes: [PROGRAM_FILE_TYPE],
          defaultFor: [PROGRAM_FILE_TYPE],
          readOnly: true
        },
        settings
      )
    );
    // PIR programs: JSON text, drawn from the same ProgramJSON (the server tells the formats apart by content)
    app.docRegistry.addWidgetFactory(
      new ProgramFileFactory(
        { name: PIR_FACTORY, label: 'Kernelcore Graph', modelName: 'text', fileTypes: [JSON_FILE_TYPE], readOnly: true },
        settings
      )
    );
    // the file browser's listing and its handleOpen are protected (open to subclasses); without them a PIR
    // file still opens through "Open With"
    const listing = (browser as unknown as { listing?: Partial<IOpeningListing> } | null)?.listing;
    if (listing && typeof listing.handleOpen === 'function') {
      routePirOpenings(listing as IOpeningListing, {
        fileTypeOf: path => app.docRegistry.getFileTypesForPath(path)[0]?.name ?? null,
        isPir: item => isPirFile(app.serviceManager.contents, item.path, item.size),
        openAsGraph: path => void app.commands.execute('docmanager:open', { path, factory: PIR_FACTORY })
      });
    }
  }
};

const modelPlugin: JupyterFrontEndPlugin<IKernelcoreDebuggerModel> = {
  id: '@kernelcore/labextension:debugger-model',
  description: 'The kernelcore debugger model: the active notebook kernel\'s debug session over a comm.',
  autoStart: true,
  provides: IKernelcoreDebuggerModel,
  optional: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker | null): IKernelcoreDebuggerModel => {
    const model = new DebuggerModel();
    // the program renderer (a cell result) fetches a big program's groups from the kernel of its notebook
    setKernelLookup(node => {
      let kernel: any = null;
      tracker?.forEach(panel => {
        if (!kernel && panel.node.contains(node)) {
          kernel = panel.sessionContext.session?.kernel ?? null;
        }
      });
      return kernel;
    });
    // once a kernel uses kernelcore (its debug comm answered), start the page's layout worker: Graphviz
    // compiles while the user writes the next cell, not while the first graph waits for it
    model.changed.connect(() => {
      if (model.status === 'connected') {
        sharedLayout().warm();
      }
    });
    // a cell ran in the active notebook: it may have imported kernelcore_widgets or started a session after a
    // restart
    followActiveNotebook(tracker, NotebookActions.executed, model);
    return model;
  }
};

const debuggerPlugin: JupyterFrontEndPlugin<void> = {
  id: '@kernelcore/labextension:debugger',
  description: 'kernelcore: the debugger sidebar and its commands.',
  autoStart: true,
  requires: [IKernelcoreDebuggerModel],
  optional: [INotebookTracker, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    model: IKernelcoreDebuggerModel,
    tracker: INotebookTracker | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const current = () => {
      const panel = tracker?.currentWidget ?? null;
      return panel
        ? { name: panel.context.path, nb: (panel.content.model as any) ?? null, kernel: (panel.sessionContext.session?.kernel as any) ?? null }
        : null;
    };
    // programs drawn as outputs or files (the MIME renderer, the file viewer) act on the live session through
    // the model this plugin was given
    setDebuggerModel(model);
    const sidebar = new KernelcoreSidebar(model, current);
    sidebar.title.icon = kernelcoreIcon;
    // the tensor viewer in the main area, one panel per variable name, following the session's cursor
    const tensors = new Map<string, MainAreaWidget<TensorPanel>>();
    const viewTensor = (name: string, scope: number | null) => {
      let w = tensors.get(name);
      if (!w || w.isDisposed) {
        const panel = new TensorPanel(model, name, scope);
        w = new MainAreaWidget({ content: panel });
        w.id = `${panel.id}-area`;
        w.title.label = panel.title.label;
        w.title.caption = panel.title.caption;
        w.title.icon = kernelcoreIcon;
        w.title.closable = true;
        w.addClass('jp-Kernelcore-tensorArea');
        tensors.set(name, w);
        w.disposed.connect(() => tensors.delete(name));
        app.shell.add(w, 'main', { mode: 'split-right' });
      }
      app.shell.activateById(w.id);
    };
    sidebar.onViewTensor = viewTensor;
    app.commands.addCommand(CommandIDs.viewTensor, {
      label: 'Kernelcore: View a tensor at the debugger\'s cursor',
      isEnabled: () => !!model.session,
      execute: args => {
        const name = String((args as any)?.name ?? '');
        if (name) {
          viewTensor(name, typeof (args as any)?.scope === 'number' ? (args as any).scope : null);
        }
      }
    });
    app.shell.add(sidebar, 'right', { rank: 900 });
    restorer?.add(sidebar, 'kernelcore-debugger');
    const refreshSoon = (() => {
      let timer: ReturnType<typeof setTimeout> | null = null;
      return () => {
        if (timer) {
          clearTimeout(timer);
        }
        timer = setTimeout(() => sidebar.refresh(), 200);
      };
    })();
    tracker?.currentChanged.connect(refreshSoon);
    NotebookActions.executed.connect((_, args) => {
      if (args.notebook === tracker?.currentWidget?.content) {
        refreshSoon();
      }
    });

    app.commands.addCommand(CommandIDs.openDebugger, {
      label: 'Open Kernelcore Debugger',
      caption: 'show the kernelcore debugger panel for the active notebook',
      icon: kernelcoreIcon,
      execute: () => {
        app.shell.activateById(sidebar.id);
        sidebar.refresh(true);
        model.reconnect();
      }
    });
    for (const { commandId, name, palette, keys } of MOVES) {
      app.commands.addCommand(commandId, {
        label: palette,
        caption: `sends "${name}" to the kernel's debug session`,
        isEnabled: () => !!model.session,
        execute: () => sidebar.run(name)
      });
      for (const selector of ['.jp-Notebook', '.jp-Kernelcore-sidebar']) {
        app.commands.addKeyBinding({ command: commandId, keys: [keys], selector });
      }
    }
    for (const spec of CONTROLS) {
      app.commands.addCommand(spec.commandId, {
        label: spec.palette,
        caption: spec.help,
        isEnabled: () => controlEnabled(spec, model),
        execute: () => sidebar.run(spec.name)
      });
      for (const selector of ['.jp-Notebook', '.jp-Kernelcore-sidebar']) {
        app.commands.addKeyBinding({ command: spec.commandId, keys: [spec.keys], selector });
      }
    }
    app.commands.addCommand(CommandIDs.runN, {
      label: 'Kernelcore: Run N steps',
      isEnabled: () => !!model.session,
      execute: args => sidebar.run('run_n', { n: Math.max(1, Number((args as any)?.n ?? 1) | 0) })
    });
    model.changed.connect(() => app.commands.notifyCommandChanged());
    // the graph (file, output or widget) that last had the focus, exported as its toolbar's buttons do
    trackGraphFocus();
    const exports = [[CommandIDs.exportGraphSvg, 'svg'], [CommandIDs.exportGraphPng, 'png']] as const;
    for (const [command, format] of exports) {
      app.commands.addCommand(command, {
        label: `Kernelcore: Export the graph as ${format.toUpperCase()}`,
        caption: 'the whole graph last focused, groups open as now',
        isEnabled: hasFocusedGraph,
        execute: () => exportFocusedGraph(format)
      });
    }

    if (palette) {
      const category = 'Kernelcore';
      [CommandIDs.openDebugger, ...MOVES.map(m => m.commandId), ...CONTROLS.map(c => c.commandId), CommandIDs.runN, ...exports.map(e => e[0])].forEach(command => palette.addItem({ command, category }));
    }
  }
};

export default [viewerPlugin, modelPlugin, debuggerPlugin, healthPlugin];
