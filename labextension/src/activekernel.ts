/**
 * The sidebar models (debugger, training health) follow the active notebook's kernel: another notebook, or
 * another kernel in the same one, is followed at once; a cell run in the active notebook makes the model try
 * its comm again (the cell may have imported kernelcore_widgets, whose comm targets the model opens).
 */
import type { KernelLike } from './kernelchannel';

/** What a model that follows the kernel offers (DebuggerModel, HealthModel). */
export interface KernelFollower {
  setKernel(kernel: KernelLike | null, hasNotebook: boolean): void;
  reconnect(): void;
}

interface SignalLike<A> {
  connect(fn: (sender: any, args: A) => void): unknown;
  disconnect(fn: (sender: any, args: A) => void): unknown;
}

/** The part of a notebook panel we read (@jupyterlab/notebook NotebookPanel). */
interface NotebookLike {
  readonly content: unknown;
  readonly sessionContext: { session?: { kernel?: unknown } | null; kernelChanged: SignalLike<unknown> };
}

/** The part of the notebook tracker we use (@jupyterlab/notebook INotebookTracker). */
export interface NotebookTrackerLike {
  readonly currentWidget: NotebookLike | null;
  readonly currentChanged: SignalLike<unknown>;
}

/**
 * Keep `model` on the kernel of `tracker`'s current notebook from now on; `executed` is
 * NotebookActions.executed.
 */
export function followActiveNotebook(
  tracker: NotebookTrackerLike | null,
  executed: SignalLike<{ notebook: unknown }>,
  model: KernelFollower
): void {
  const follow = () => {
    const nb = tracker?.currentWidget ?? null;
    model.setKernel((nb?.sessionContext.session?.kernel as KernelLike | undefined) ?? null, !!nb);
  };
  let watched: NotebookLike['sessionContext'] | null = null;
  tracker?.currentChanged.connect(() => {
    watched?.kernelChanged.disconnect(follow);
    watched = tracker.currentWidget?.sessionContext ?? null;
    watched?.kernelChanged.connect(follow);
    follow();
  });
  executed.connect((_, args) => {
    if (args.notebook === tracker?.currentWidget?.content) {
      model.reconnect();
    }
  });
  follow();
}
