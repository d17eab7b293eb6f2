/**
 * The `:health` plugin: the "Training health" panel (healthpanel.ts) in the left sidebar, following the active
 * notebook's kernel as the debugger model does, and the palette command "kernelcore: Show training health".
 * A click in the panel opens a debug session there; the debugger sidebar (`kernelcore:open-debugger`) is shown
 * then, at that op and iteration.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { followActiveNotebook } from './activekernel';
import { HealthModel } from './healthmodel';
import { HealthPanel } from './healthpanel';

export const SHOW_HEALTH = 'kernelcore:show-health';
const OPEN_DEBUGGER = 'kernelcore:open-debugger';

// A static icon: a pulse line over a baseline.
export const healthIcon = new LabIcon({
  name: 'kernelcore:health',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><g class="jp-icon3" fill="none" stroke="#616161" stroke-width="1.4" stroke-linejoin="round"><path d="M1 9h3l2-5 3 9 2-6 1 2h3"/></g></svg>'
});

export const healthPlugin: JupyterFrontEndPlugin<void> = {
  id: '@kernelcore/labextension:health',
  description: 'kernelcore: the training-health sidebar panel over the kernel\'s flight recorders.',
  autoStart: true,
  optional: [INotebookTracker, ICommandPalette, ILayoutRestorer],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker | null, palette: ICommandPalette | null, restorer: ILayoutRestorer | null) => {
    const model = new HealthModel();
    const panel = new HealthPanel(model);
    panel.title.icon = healthIcon;
    panel.onDebuggerMoved = () => {
      if (app.commands.hasCommand(OPEN_DEBUGGER)) {
        void app.commands.execute(OPEN_DEBUGGER);
      }
    };
    // a cell ran in the active notebook: it may have imported kernelcore_widgets (the comm target) or
    // restarted the recording
    followActiveNotebook(tracker, NotebookActions.executed, model);
    app.shell.add(panel, 'left', { rank: 1000 });
    restorer?.add(panel, 'kernelcore-health');
    app.commands.addCommand(SHOW_HEALTH, {
      label: 'kernelcore: Show training health',
      caption: 'the flight recorders of the active notebook\'s kernel: loss, gradient norms, ops over iterations',
      icon: healthIcon,
      execute: () => {
        app.shell.activateById(panel.id);
        model.reconnect();
        panel.ask({});
      }
    });
    palette?.addItem({ command: SHOW_HEALTH, category: 'Kernelcore' });
  }
};
