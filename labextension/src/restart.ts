/**
 * A widget view whose kernel went away. When the kernel restarts (or shuts down), the widget manager
 * marks every model's comm dead (Backbone event `comm_live_update`; a closed comm fires `comm:close`):
 * nothing the view sends will be answered and nothing will update it. The view then says so, over itself,
 * and stops taking input, instead of failing silently or with an error: "Kernel restarted: re-run the cell".
 */
import { h } from './dom';
import type { RenderProps, WidgetModel } from './model';

export const DEAD_CLASS = 'jp-Kernelcore-disconnected';
export const DEAD_TEXT = 'Kernel restarted: this view is no longer connected to Python. Re-run the cell to show it again.';

/** Watch `model` and put the notice on `root` when its comm dies. Returns the unwatch function. */
export function watchKernel(model: WidgetModel<object>, root: HTMLElement): () => void {
  let shown = false;
  const dead = () => {
    if (shown || (model as any).comm_live === true) {
      return;
    }
    shown = true;
    root.classList.add(DEAD_CLASS);
    const note = h('div', { cls: 'jp-Kernelcore-deadNote', attrs: { role: 'alert' } }, [
      h('b', { text: 'Kernel restarted. ' }),
      'This view is no longer connected to Python. Re-run the cell to show it again.'
    ]);
    root.prepend(note);
  };
  model.on('comm_live_update', dead);
  model.on('comm:close', dead);
  return () => {
    model.off('comm_live_update', dead);
    model.off('comm:close', dead);
  };
}

/** An anywidget `render` that also shows the kernel-restarted notice on its element (same return type). */
export function withKernelNotice<T extends object, R extends (() => void) | Promise<() => void>>(render: (props: RenderProps<T>) => R): (props: RenderProps<T>) => R {
  return (props: RenderProps<T>) => {
    const unwatch = watchKernel(props.model, props.el);
    const done = render(props);
    const cleanup = (inner: () => void) => () => {
      unwatch();
      props.el.classList.remove(DEAD_CLASS);
      props.el.querySelector(':scope > .jp-Kernelcore-deadNote')?.remove();
      inner();
    };
    return (done instanceof Promise ? done.then(cleanup) : cleanup(done as () => void)) as R;
  };
}
