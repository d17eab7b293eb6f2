/** A fake anywidget model: get/set/on/off/send/save_changes, recording what the view sends and saves. */
type Cb = (...args: unknown[]) => void;

export class FakeModel {
  state: Record<string, any>;
  sent: any[] = [];
  saves = 0;
  handlers: Record<string, Cb[]> = {};
  widget_manager?: { get_model(id: string): Promise<FakeModel> };

  constructor(state: Record<string, any> = {}) {
    this.state = { ...state };
  }

  get(key: string): any {
    return this.state[key];
  }

  set(key: string, value: unknown): void {
    const old = this.state[key];
    this.state[key] = value;
    if (old !== value) {
      (this.handlers[`change:${key}`] ?? []).slice().forEach(cb => cb(this, value));
    }
  }

  on(event: string, cb: Cb): void {
    (this.handlers[event] ??= []).push(cb);
  }

  off(event?: string | null, cb?: Cb | null): void {
    if (!event) {
      this.handlers = {};
      return;
    }
    this.handlers[event] = cb ? (this.handlers[event] ?? []).filter(x => x !== cb) : [];
  }

  send(content: any): void {
    this.sent.push(content);
  }

  save_changes(): void {
    this.saves++;
  }

  /** What Python would do: set a trait from the kernel side. */
  pythonSets(key: string, value: unknown): void {
    this.set(key, value);
  }

  listenerCount(): number {
    return Object.values(this.handlers).reduce((s, l) => s + l.length, 0);
  }
}

export function container(): HTMLElement {
  const el = document.createElement('div');
  document.body.appendChild(el);
  return el;
}

/** Every text node's content under `el`. */
export function texts(el: Element): string[] {
  const out: string[] = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let n = walker.nextNode();
  while (n) {
    out.push(n.textContent ?? '');
    n = walker.nextNode();
  }
  return out;
}

export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise(r => setTimeout(r, 0));
  }
}

/**
 * A composite widget's children, as anywidget's widget manager finds them: each child trait of `parent` set
 * to "IPY_MODEL_<id>" (null for none), and `parent.widget_manager.get_model(id)` answering the child model.
 */
export function withChildren<M extends FakeModel>(parent: M, children: Record<string, FakeModel | null>): M {
  const byId = new Map<string, FakeModel>();
  Object.entries(children).forEach(([trait, child], i) => {
    const id = `child-${i}-${trait}`;
    if (child) {
      byId.set(id, child);
    }
    parent.state[trait] = child ? `IPY_MODEL_${id}` : null;
  });
  parent.widget_manager = {
    get_model: async (id: string) => {
      const m = byId.get(id);
      if (!m) {
        throw new Error(`no model ${id}`);
      }
      return m;
    }
  };
  return parent;
}
