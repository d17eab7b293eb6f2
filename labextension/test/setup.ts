// jsdom has no canvas: getContext returns null (what the preview code expects), without jsdom's warning.
HTMLCanvasElement.prototype.getContext = (() => null) as unknown as typeof HTMLCanvasElement.prototype.getContext;
// jsdom has no DragEvent; @lumino/dragdrop (via @lumino/widgets) subclasses it at import time.
if (typeof (globalThis as any).DragEvent === 'undefined') {
  (globalThis as any).DragEvent = class DragEvent extends MouseEvent {};
}
// jsdom has no Web Worker: the views lay out with Graphviz on the test's thread (the same WASM build).
import { setLayoutEngine } from '../src/layout';
import { vizLayout } from '../src/vizdirect';
setLayoutEngine(vizLayout);
