import { afterEach, describe, expect, it } from 'vitest';
import mimeExtensions, { KernelcoreRenderer } from '../src/mime';
import { findLastKernelcoreOutput } from '../src/sidebar';
import { PROGRAM_MIME, TRACE_MIME } from '../src/schema';
import { HOSTILE, mlp, trace } from './fixtures';
import { texts } from './fake-model';

afterEach(() => {
  document.body.textContent = '';
});

function mimeModel(mime: string, value: unknown) {
  return { data: { [mime]: value }, metadata: {}, trusted: false, setData: () => undefined } as any;
}

describe('rendermime extension', () => {
  it('declares safe renderers for both MIME types and the trace file type', () => {
    const ids = mimeExtensions.map(e => e.id);
    expect(ids).toEqual(['@kernelcore/labextension:program-renderer', '@kernelcore/labextension:trace-renderer']);
    expect(mimeExtensions.flatMap(e => e.rendererFactory.mimeTypes)).toEqual([PROGRAM_MIME, TRACE_MIME]);
    expect(mimeExtensions.every(e => e.rendererFactory.safe)).toBe(true);
    expect(mimeExtensions[1].fileTypes![0].extensions).toEqual(['.kctrace.json']);
  });

  it('renders a program output without a kernel', async () => {
    const r = new KernelcoreRenderer(PROGRAM_MIME);
    document.body.appendChild(r.node);
    await r.renderModel(mimeModel(PROGRAM_MIME, mlp()));
    expect(r.node.querySelectorAll('svg g.node').length).toBe(11);
    expect(r.node.querySelector('img, script')).toBeNull();
    expect(texts(r.node)).toContain(HOSTILE);
    // a click shows what the program says (no message: there is no kernel)
    r.node.querySelector('g.node.jp-Kernelcore-op')!.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(texts(r.node).some(t => t.includes('from the program (no kernel)'))).toBe(true);
    r.dispose();
  });

  it('renders a trace output, noting truncation', async () => {
    const r = new KernelcoreRenderer(TRACE_MIME);
    await r.renderModel(mimeModel(TRACE_MIME, { ...trace(), truncated: 5 }));
    expect(r.node.querySelectorAll('.jp-Kernelcore-event').length).toBe(8);
    expect(r.node.querySelector('.jp-Kernelcore-note')!.textContent).toContain('5 more were left out');
    r.dispose();
  });

  it('says so when the data is not what it should be', async () => {
    const r = new KernelcoreRenderer(PROGRAM_MIME);
    await r.renderModel(mimeModel(PROGRAM_MIME, { nope: 1 }));
    expect(r.node.querySelector('.jp-Kernelcore-error')!.textContent).toContain('not a kernelcore program');
    r.dispose();
  });
});

describe('sidebar and commands', () => {
  const list = (items: any[]) => ({ length: items.length, get: (i: number) => items[i] });

  it('finds the last kernelcore output of a notebook', () => {
    const nb = {
      cells: list([
        { outputs: list([{ data: { [PROGRAM_MIME]: 'p0' } }]) },
        { outputs: list([{ data: { [TRACE_MIME]: 't1' } }, { data: { 'text/plain': 'x' } }]) },
        {},
        { outputs: list([]) }
      ])
    };
    expect(findLastKernelcoreOutput(nb)).toEqual({ mime: TRACE_MIME, data: 't1', cell: 1 });
    expect(findLastKernelcoreOutput({ cells: list([]) })).toBeNull();
    expect(findLastKernelcoreOutput(null)).toBeNull();
  });
});
