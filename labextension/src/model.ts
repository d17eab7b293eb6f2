/**
 * The part of anywidget's model the views use, and a local model with the same surface for places
 * without a kernel (MIME renderers, file viewers, the sidebar) and for tests.
 */

export type Callback = (...args: unknown[]) => void;

/** A model's traits: what `get` and `set` may name (widgets.generated.ts has each widget's, from Python). */
export type Traits = object;

/**
 * The subset of anywidget's AnyModel<T> (0.11) the views touch, typed by the widget's traits `T` (generated
 * from the Python widget: widgets.generated.ts), as AnyModel<T> is.
 */
/** anywidget's widget manager, as far as a composite view uses it: a child widget's model by its id. */
export interface WidgetManagerLike {
  get_model(model_id: string): Promise<WidgetModel<any>>;
}

export interface WidgetModel<T extends Traits = Record<string, any>> {
  get<K extends keyof T & string>(key: K): T[K];
  set<K extends keyof T & string>(key: K, value: T[K]): void;
  on(event: string, callback: Callback): void;
  off(event?: string | null, callback?: Callback | null): void;
  send(content: any, callbacks?: unknown, buffers?: unknown): void;
  save_changes(): void;
  /** anywidget's widget manager (a composite view finds its children's models there) */
  widget_manager?: WidgetManagerLike;
}

/** The model a child-widget trait ("IPY_MODEL_<id>", as ipywidgets serializes a widget) refers to. */
export async function childModel<C extends Traits>(model: WidgetModel<object>, ref: string | null): Promise<WidgetModel<C> | null> {
  if (!ref) {
    return null;
  }
  if (!model.widget_manager) {
    throw new Error(`no widget manager to find the child model ${ref}`);
  }
  return (await model.widget_manager.get_model(ref.replace(/^IPY_MODEL_/, ''))) as WidgetModel<C>;
}

/** What anywidget passes to render(). */
export interface RenderProps<T extends Traits = Record<string, any>> {
  model: WidgetModel<T>;
  el: HTMLElement;
}

/**
 * A model kept in the browser. `set` fires `change:<key>` (and `change`) like Backbone does;
 * `send` hands the message to `onSend` (by default it is dropped: there is no kernel to answer).
 */
export class LocalModel<T extends Traits = Record<string, any>> implements WidgetModel<T> {
  private _state: Record<string, unknown>;
  private _handlers = new Map<string, Set<Callback>>();
  onSend: ((content: any, model: LocalModel<T>) => void) | null = null;
  readonly sent: any[] = [];

  constructor(state: Partial<T> = {}) {
    this._state = { ...state };
  }

  get<K extends keyof T & string>(key: K): T[K] {
    return this._state[key] as T[K];
  }

  set<K extends keyof T & string>(key: K, value: T[K]): void {
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
export class Listeners<T extends Traits = Record<string, any>> {
  private _items: Array<[string, Callback]> = [];
  constructor(private _model: WidgetModel<T>) {}

  /** Call `cb` on a change of any of `keys`. */
  onChange(keys: Array<keyof T & string>, cb: () => void): void {
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
export function setTrait<T extends Traits, K extends keyof T & string>(model: WidgetModel<T>, key: K, value: T[K]): void {
  model.set(key, value);
  model.save_changes();
}
