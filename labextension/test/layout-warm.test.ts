import { afterEach, describe, expect, it } from 'vitest';
import { sharedLayout, workerLayout } from '../src/layout';

/** A stand-in for the page's Web Worker (jsdom has none): answers every job with a one-node SVG. */
class FakeWorker {
  static made = 0;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  constructor(public url: string) {
    FakeWorker.made++;
  }
  postMessage(m: { id: number }): void {
    setTimeout(() => this.onmessage?.({ data: { id: m.id, svg: '<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>' } }), 0);
  }
  terminate(): void {}
}

const g = globalThis as any;

afterEach(() => {
  delete g.__kernelcoreLayout;
  delete g.Worker;
  FakeWorker.made = 0;
});

describe('the shared layout worker', () => {
  it('warm() starts it once with nothing to lay out, and the first layout uses that worker', async () => {
    g.Worker = FakeWorker;
    const shared = sharedLayout();
    shared.warm();
    shared.warm();
    expect(FakeWorker.made).toBe(1);
    expect(shared.starts).toBe(1);
    const svg = await workerLayout('digraph { a }');
    expect(svg.nodeName.toLowerCase()).toBe('svg');
    expect(FakeWorker.made).toBe(1);
  });

  it('warm() is quiet where no worker can start; the first layout says why', async () => {
    g.Worker = class {
      constructor() {
        throw new Error('blocked by policy');
      }
    };
    const shared = sharedLayout();
    expect(() => shared.warm()).not.toThrow();
    await expect(workerLayout('digraph { a }')).rejects.toThrow(/could not start.*blocked by policy/);
  });
});
