/**
 * The JupyterLab plugin @kernelcore/labextension:plugin:
 *  - a viewer for program files (.pdmodel, __model__, .kcprog) that asks the server extension for the
 *    ProgramJSON and draws the graph;
 *  - the right-sidebar "Kernelcore debugger" panel: the active notebook's last kernelcore output;
 *  - commands kernelcore:open-debugger, kernelcore:step, kernelcore:next, kernelcore:continue, the
 *    last three bound to Accel Shift F11 / F10 / F9 in notebooks and in the panel. Each runs
 *    `__import__("kernelcore_widgets").active_debugger().<step|next|cont>()` in the active notebook's
 *    kernel (store_history off) and shows the text it printed or returned in the panel.
 * The MIME renderers (outputs and *.kctrace.json files) are the separate mimeExtension in mime.ts.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { executeText, StepCommand, stepCode } from './kernel';
import { PROGRAM_FACTORY, PROGRAM_FILE_TYPE, ProgramFileFactory } from './fileviewer';
import { KernelcoreSidebar } from './sidebar';

export const PLUGIN_ID = '@kernelcore/labextension:plugin';

export namespace CommandIDs {
  export const openDebugger = 'kernelcore:open-debugger';
  export const step = 'kernelcore:step';
  export const next = 'kernelcore:next';
  export const cont = 'kernelcore:continue';
}

const STEP_COMMANDS: Array<[string, StepCommand, string, string]> = [
  [CommandIDs.step, 'step', 'Kernelcore: Step (into sub-blocks)', 'Accel Shift F11'],
  [CommandIDs.next, 'next', 'Kernelcore: Next (over sub-blocks)', 'Accel Shift F10'],
  [CommandIDs.cont, 'cont', 'Kernelcore: Continue', 'Accel Shift F9']
];

// A static icon (no data in it): a graph of three nodes.
export const kernelcoreIcon = new LabIcon({
  name: 'kernelcore:debugger',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><g class="jp-icon3" fill="#616161"><circle cx="4" cy="3.5" r="2.2"/><circle cx="12" cy="3.5" r="2.2"/><rect x="5.5" y="10" width="5" height="4" rx="1"/><path d="M4.6 5.5 7.6 10h.8l3-4.5-.9-.6L8 8.8 5.5 4.9z"/></g></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'kernelcore: program file viewer, debugger sidebar and step commands.',
  autoStart: true,
  optional: [INotebookTracker, ICommandPalette, ILayoutRestorer],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker | null, palette: ICommandPalette | null, restorer: ILayoutRestorer | null) => {
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

    // The sidebar.
    const current = () => {
      const panel = tracker?.currentWidget ?? null;
      return panel ? { name: panel.context.path, nb: (panel.content.model as any) ?? null } : null;
    };
    const sidebar = new KernelcoreSidebar({ run: cmd => app.commands.execute(cmd) as Promise<void> }, current);
    sidebar.title.icon = kernelcoreIcon;
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
      caption: 'show the kernelcore panel for the active notebook',
      icon: kernelcoreIcon,
      execute: () => {
        app.shell.activateById(sidebar.id);
        sidebar.refresh(true);
      }
    });

    for (const [id, cmd, label, keys] of STEP_COMMANDS) {
      app.commands.addCommand(id, {
        label,
        caption: `runs ${stepCode(cmd)} in the active notebook's kernel`,
        isEnabled: () => !!tracker?.currentWidget?.sessionContext.session?.kernel,
        execute: async () => {
          const kernel = tracker?.currentWidget?.sessionContext.session?.kernel;
          if (!kernel) {
            sidebar.showReply('no active notebook with a running kernel', true);
            return;
          }
          sidebar.showReply(`${label}\u2026`);
          try {
            const r = await executeText(kernel as any, stepCode(cmd));
            sidebar.showReply(r.text || `${label}: done`, r.error);
          } catch (err) {
            sidebar.showReply(String((err as Error)?.message ?? err), true);
          }
        }
      });
      for (const selector of ['.jp-Notebook', '.jp-Kernelcore-sidebar']) {
        app.commands.addKeyBinding({ command: id, keys: [keys], selector });
      }
    }

    if (palette) {
      const category = 'Kernelcore';
      [CommandIDs.openDebugger, CommandIDs.step, CommandIDs.next, CommandIDs.cont].forEach(command => palette.addItem({ command, category }));
    }
  }
};

export default plugin;
