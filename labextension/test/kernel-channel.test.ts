import { afterEach, describe, expect, it, vi } from 'vitest';
import { KernelChannel, LOST_OPENING_MS, OpenOn, SUBSHELL_WAIT_MS, statusSentence } from '../src/kernelchannel';
import { FakeComm, FakeKernel } from './fake-comm';

interface Answer {
  id: number;
  error: string | null;
}

/** A comm whose subshell starts when the test says so. */
class SubshellComm extends FakeComm {
  disposed = false;
  commsOverSubshells = 'perCommTarget';
  start!: () => void;
  readonly subshellStarted = new Promise<void>(resolve => (this.start = resolve));
  get isDisposed(): boolean {
    return this.disposed;
  }
  dispose(): void {
    this.disposed = true;
  }
  open(): void {
    if (this.disposed) {
      throw new Error('Cannot open'); // as Lab's CommHandler
    }
    super.open();
  }
}

/** A kernel whose comms have subshells (or not: `subshells`), its info settled at once. */
class SubshellKernel extends FakeKernel {
  readonly info = Promise.resolve({});
  constructor(readonly supportsSubshells = true) {
    super();
  }
  createComm(target: string): SubshellComm {
    const c = new SubshellComm(target);
    this.comms.push(c);
    return c;
  }
  get comm(): SubshellComm {
    return this.comms[this.comms.length - 1] as SubshellComm;
  }
}

/** A channel whose owner settles the replies it gets and counts what the channel told it. */
function channel(openOn: OpenOn = 'main', kernel: FakeKernel = new FakeKernel()) {
  const seen = { forgot: 0, changed: 0 };
  const ch: KernelChannel<Answer> = new KernelChannel<Answer>('kernelcore.test', {
    message: data => {
      const d = data as Answer;
      ch.markConnected();
      ch.settle(d.id, d);
    },
    forget: () => seen.forgot++,
    changed: () => seen.changed++,
    failure: (id, error) => ({ id, error })
  }, openOn);
  ch.setKernel(kernel);
  return { ch, kernel, seen };
}

function ask(ch: KernelChannel<Answer>, timeoutMs?: number): { id: number; answers: Answer[] } {
  const id = ch.nextId();
  const answers: Answer[] = [];
  const timeout = timeoutMs === undefined ? undefined : { ms: timeoutMs, reply: { id, error: 'timed out' } };
  ch.send(id, { id }, r => answers.push(r), timeout);
  return { id, answers };
}

afterEach(() => vi.useRealTimers());

describe('KernelChannel', () => {
  it('opens the comm on its target and is connected once the kernel answers', () => {
    const { ch, kernel } = channel();
    expect(kernel.comm.target).toBe('kernelcore.test');
    expect(kernel.comm.opened).toBe(true);
    expect(ch.status).toBe('connecting');
    const { id, answers } = ask(ch);
    kernel.comm.deliver({ id, error: null });
    expect(ch.connected).toBe(true);
    expect(answers).toEqual([{ id, error: null }]);
  });

  it('answers a request once: a reply after its timeout is dropped', () => {
    vi.useFakeTimers();
    const { ch, kernel } = channel();
    const { id, answers } = ask(ch, 1000);
    vi.advanceTimersByTime(1000);
    kernel.comm.deliver({ id, error: null });
    expect(answers).toEqual([{ id, error: 'timed out' }]);
  });

  it('fails the requests still waiting when the comm closes, and forgets the kernel side', () => {
    const { ch, kernel, seen } = channel();
    const waiting = ask(ch);
    const forgotBefore = seen.forgot;
    kernel.comm.onClose({});
    expect(waiting.answers).toEqual([{ id: waiting.id, error: 'the comm closed' }]);
    expect(ch.status).toBe('no-target');
    expect(seen.forgot).toBe(forgotBefore + 1);
    kernel.comm.deliver({ id: waiting.id, error: null });
    expect(waiting.answers).toHaveLength(1);
  });

  it('says restarted when the kernel restarts, until it reconnects', () => {
    const { ch, kernel } = channel();
    const waiting = ask(ch);
    kernel.restart();
    expect(ch.status).toBe('restarted');
    expect(kernel.comm.closed).toBe(true);
    expect(waiting.answers).toEqual([{ id: waiting.id, error: 'the comm closed' }]);
    ch.reconnect();
    expect(kernel.comms).toHaveLength(2);
    expect(ch.status).toBe('connecting');
  });

  it('says no-target when the kernel has no comm target, and no-kernel / no-notebook without a kernel', () => {
    const { ch } = channel();
    const bare = new FakeKernel();
    bare.noTarget = true;
    ch.setKernel(bare);
    expect(ch.status).toBe('no-target');
    ch.setKernel(null);
    expect(ch.status).toBe('no-kernel');
    ch.setKernel(null, false);
    expect(ch.status).toBe('no-notebook');
  });

  it('keeps a comm the kernel has not answered yet when asked to reconnect, and opens one where it is gone', () => {
    const { ch, kernel } = channel();
    ch.reconnect(); // the kernel answers or closes the first comm after the cells queued before it
    expect(kernel.comms).toHaveLength(1);
    expect(kernel.comm.closed).toBe(false);
    kernel.comm.onClose({}); // it had no target
    expect(ch.status).toBe('no-target');
    ch.reconnect();
    expect(kernel.comms).toHaveLength(2);
    kernel.comm.deliver({ id: 0, error: null });
    ch.reconnect();
    expect(kernel.comms).toHaveLength(2);
    expect(kernel.comm.closed).toBe(false);
  });

  it('leaves an unanswered comm to the kernel it left: closed once answered, and its close is no change', () => {
    const { ch, kernel, seen } = channel();
    const first = kernel.comm;
    const other = new FakeKernel();
    ch.setKernel(other);
    expect(first.closed).toBe(false); // a close now would cross the kernel's own close of a comm without target
    const changed = seen.changed;
    first.onClose({});
    expect(seen.changed).toBe(changed);
    expect(ch.status).toBe('connecting');
    const second = new FakeKernel();
    ch.setKernel(second);
    other.comm.deliver({ id: 0, error: null }); // the kernel had the target: its answer closes the comm
    expect(other.comm.closed).toBe(true);
    expect(ch.status).toBe('connecting');
    second.comm.deliver({ id: 0, error: null });
    ch.setKernel(new FakeKernel()); // an answered comm is closed at once
    expect(second.comm.closed).toBe(true);
  });

  it('stops following the kernel it left', () => {
    const { ch, kernel } = channel();
    ch.setKernel(new FakeKernel());
    expect(kernel.listeners).toHaveLength(0);
    kernel.restart();
    expect(ch.status).toBe('connecting');
  });
});

describe('KernelChannel opened beside the cells', () => {
  const settled = () => new Promise(r => setTimeout(r, 0));

  it('opens the comm once its subshell started, so that the opening does not wait behind a running cell', async () => {
    const kernel = new SubshellKernel();
    const { ch } = channel('beside', kernel);
    await settled();
    expect(kernel.comm.opened).toBe(false);
    expect(ch.status).toBe('connecting');
    kernel.comm.start();
    await settled();
    expect(kernel.comm.opened).toBe(true);
    kernel.comm.deliver({ id: 0, error: null });
    expect(ch.connected).toBe(true);
  });

  it('opens at once on the main shell where the kernel has no subshells, or asked to', async () => {
    const bare = new SubshellKernel(false);
    channel('beside', bare);
    await settled();
    expect(bare.comm.opened).toBe(true);
    const main = new SubshellKernel();
    channel('main', main);
    expect(main.comm.opened).toBe(true);
  });

  it('opens on the main shell after SUBSHELL_WAIT_MS where the subshell does not start', async () => {
    vi.useFakeTimers();
    const kernel = new SubshellKernel();
    channel('beside', kernel);
    await vi.advanceTimersByTimeAsync(SUBSHELL_WAIT_MS - 1);
    expect(kernel.comm.opened).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(kernel.comm.opened).toBe(true);
  });

  it('opens at once where comms over subshells are turned off (the subshell would never start)', () => {
    const kernel = new SubshellKernel();
    const created = kernel.createComm.bind(kernel);
    kernel.createComm = (target: string) => {
      const c = created(target);
      c.commsOverSubshells = 'disabled';
      return c;
    };
    channel('beside', kernel);
    expect(kernel.comm.opened).toBe(true);
  });

  it('makes no second comm when asked to reconnect while the opening waits', async () => {
    const kernel = new SubshellKernel();
    const { ch } = channel('beside', kernel);
    ch.reconnect();
    kernel.comm.start();
    await settled();
    expect(kernel.comms).toHaveLength(1);
    expect(kernel.comm.opened).toBe(true);
  });

  it('says no-target, and throws nothing, where Lab disposed the comm while its opening waited', async () => {
    const kernel = new SubshellKernel();
    const { ch } = channel('beside', kernel);
    kernel.comm.dispose(); // the notebook closed: Lab's kernel connection disposes its comms, no onClose
    kernel.comm.start();
    await settled();
    expect(kernel.comm.opened).toBe(false);
    expect(ch.status).toBe('no-target');
    ch.reconnect();
    expect(kernel.comms).toHaveLength(2);
  });

  it('opens another comm on a reconnect once an opening on a subshell went unanswered too long', async () => {
    vi.useFakeTimers();
    const kernel = new SubshellKernel();
    const { ch } = channel('beside', kernel);
    const lost = kernel.comm;
    lost.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(lost.opened).toBe(true);
    await vi.advanceTimersByTimeAsync(LOST_OPENING_MS - 1);
    ch.reconnect(); // not yet: it may still be answered
    expect(kernel.comms).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    ch.reconnect();
    expect(lost.closed).toBe(true);
    expect(kernel.comms).toHaveLength(2);
    kernel.comm.start();
    await vi.advanceTimersByTimeAsync(0);
    kernel.comm.deliver({ id: 0, error: null });
    expect(ch.connected).toBe(true);
  });

  it('forgets a comm left before it opened without telling any kernel, and never opens it', async () => {
    const kernel = new SubshellKernel();
    const { ch } = channel('beside', kernel);
    const first = kernel.comm;
    ch.setKernel(new SubshellKernel());
    first.start();
    await settled();
    expect(first.disposed).toBe(true);
    expect(first.opened).toBe(false);
    expect(first.closed).toBe(false);
    kernel.restart(); // the kernel left is not followed
    expect(ch.status).toBe('connecting');
  });
});

describe('statusSentence', () => {
  it('words the kernel-independent states alike and takes the others from the model', () => {
    const own = { 'no-target': 'import it', restarted: 'run it again', connected: '' };
    expect(statusSentence('no-notebook', own)).toBe('no active notebook');
    expect(statusSentence('no-kernel', own)).toBe('the notebook has no running kernel');
    expect(statusSentence('connecting', own)).toBe('connecting to the kernel\u2026');
    expect(statusSentence('no-target', own)).toBe('import it');
    expect(statusSentence('restarted', own)).toBe('run it again');
    expect(statusSentence('connected', own)).toBe('');
  });
});
