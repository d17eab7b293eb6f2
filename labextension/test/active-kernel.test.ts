import { describe, expect, it } from 'vitest';
import { followActiveNotebook, KernelFollower } from '../src/activekernel';
import type { KernelLike } from '../src/kernelchannel';

type Slot = (sender: any, args: any) => void;

class FakeSignal {
  slots: Slot[] = [];
  connect(fn: Slot): void {
    this.slots.push(fn);
  }
  disconnect(fn: Slot): void {
    this.slots = this.slots.filter(s => s !== fn);
  }
  emit(args?: unknown): void {
    [...this.slots].forEach(s => s(this, args));
  }
}

function notebook(kernel: KernelLike | null) {
  return { content: {}, sessionContext: { session: kernel ? { kernel } : null, kernelChanged: new FakeSignal() } };
}

class Follower implements KernelFollower {
  calls: Array<[KernelLike | null, boolean] | 'reconnect'> = [];
  setKernel(kernel: KernelLike | null, hasNotebook: boolean): void {
    this.calls.push([kernel, hasNotebook]);
  }
  reconnect(): void {
    this.calls.push('reconnect');
  }
}

const kernelA = { id: 'a', createComm: () => { throw new Error('unused'); } } as KernelLike;
const kernelB = { id: 'b', createComm: () => { throw new Error('unused'); } } as KernelLike;

describe('followActiveNotebook', () => {
  it('follows the current notebook, its kernel changes, and reconnects on its cell runs only', () => {
    const tracker = { currentWidget: null as ReturnType<typeof notebook> | null, currentChanged: new FakeSignal() };
    const executed = new FakeSignal();
    const model = new Follower();
    followActiveNotebook(tracker, executed, model);
    expect(model.calls).toEqual([[null, false]]);

    const first = notebook(kernelA);
    tracker.currentWidget = first;
    tracker.currentChanged.emit();
    expect(model.calls.at(-1)).toEqual([kernelA, true]);

    first.sessionContext.session = { kernel: kernelB };
    first.sessionContext.kernelChanged.emit();
    expect(model.calls.at(-1)).toEqual([kernelB, true]);

    executed.emit({ notebook: {} });
    expect(model.calls.at(-1)).toEqual([kernelB, true]);
    executed.emit({ notebook: first.content });
    expect(model.calls.at(-1)).toBe('reconnect');

    // the notebook left behind no longer moves the model
    const second = notebook(null);
    tracker.currentWidget = second;
    tracker.currentChanged.emit();
    expect(model.calls.at(-1)).toEqual([null, true]);
    const before = model.calls.length;
    first.sessionContext.kernelChanged.emit();
    expect(model.calls).toHaveLength(before);
  });
});
