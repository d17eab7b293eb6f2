/**
 * The part of anywidget's model the views use, and a local model with the same surface for places
 * without a kernel (MIME renderers, file viewers, the sidebar) and for tests.
 */

export type Callback = (...args: unknown[]) => void;

/** The subset of anywidget's AnyModel (0.11) the views touch. */
export interface WidgetModel {
  get(key: string): any;
  set(key: string, value: unknown): void;
  on(event: string, callback: Callback): void;
  off(event?: string | null, callback?: Callback | null): void;
  send(content: any, callbacks?: unknown, buffers?: unknown): void;
  save_changes(): void;
}

/** What anywidget passes to render(). */
export interface RenderProps {
  model: WidgetModel;
  el: HTMLElement;
}

/**
 * A model kept in the browser. `set` fires `change:<key>` (and `change`) like Backbone does;
 * `send` hands the message to `onSend` (by default it is dropped: there is no kernel to answer).
 */
export class LocalModel implements WidgetModel {
  private _state: Record<string, unknown>;
  private _handlers = new Map<string, Set<Callback>>();
  onSend: ((content: any, model: LocalModel) => void) | null = null;
  readonly sent: any[] = [];

  constructor(state: Record<string, unknown> = {}) {
    this._state = { ...state };
  }

  get(key: string): any {
    return this._state[key];
  }

  set(key: string, value: unknown): void {
    const old = this._state[key];
    this._state[key] = value;
    if (old !== value) {
      this._emit(`change:${key}`, value);
      this._emit('change');
    }
  }

  on(event: string, callback: Callback): void {
    for (const name of event.split(/\s+/).filter(Boolean)) {
      let set = this._handlers.get(name);
      if (!set) {
        set = new Set();
        this._handlers.set(name, set);
      }
      set.add(callback);
    }
  }

  off(event?: string | null, callback?: Callback | null): void {
    if (!event) {
      if (!callback) {
        this._handlers.clear();
      } else {
        this._handlers.forEach(set => set.delete(callback));
      }
      return;
    }
    for (const name of event.split(/\s+/).filter(Boolean)) {
      if (callback) {
        this._handlers.get(name)?.delete(callback);
      } else {
        this._handlers.delete(name);
      }
    }
  }

  send(content: any): void {
    this.sent.push(content);
    this.onSend?.(content, this);
  }

  save_changes(): void {
    /* nothing to sync */
  }

  private _emit(event: string, ...args: unknown[]): void {
    const set = this._handlers.get(event);
    if (set) {
      [...set].forEach(cb => cb(this, ...args));
    }
  }
}

/** Model listeners that a view removes all at once when it is disposed. */
export class Listeners {
  private _items: Array<[string, Callback]> = [];
  constructor(private _model: WidgetModel) {}

  /** Call `cb` on a change of any of `keys`. */
  onChange(keys: string[], cb: () => void): void {
    for (const key of keys) {
      const fn: Callback = () => cb();
      this._model.on(`change:${key}`, fn);
      this._items.push([`change:${key}`, fn]);
    }
  }

  dispose(): void {
    for (const [event, fn] of this._items) {
      this._model.off(event, fn);
    }
    this._items = [];
  }
}

/** Set a trait and sync it to Python. */
export function setTrait(model: WidgetModel, key: string, value: unknown): void {
  model.set(key, value);
  model.save_changes();
}
