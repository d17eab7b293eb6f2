import { afterEach, describe, expect, it } from 'vitest';
import { colorLegend, divergingColor, RAMP_GRADIENT, rampColor, zeroAt } from '../src/colorramp';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DebuggerModel, KernelLike } from '../src/debugmodel';
import { GRAPH_KEYS, graphKeyRows } from '../src/graphkeys';
import { keyHelpList } from '../src/keyhelp';
import { renderPreview } from '../src/preview';
import { CONTROLS, MOVES, ServerMessage } from '../src/protocol';
import { commandTitle, controlEnabled, KernelcoreSidebar, PAUSE } from '../src/sidebar';
import { cellColor } from '../src/views/TensorViewer';
import { ProgramGraphView } from '../src/views/ProgramGraph';
import { mlp } from './fixtures';
import { FakeComm, tick } from './fake-comm';
import { container, FakeModel } from './fake-model';

// a real state message of the kernel side (tests/test_debug_comm.py writes this file)
const STATE = (JSON.parse(readFileSync(resolve(__dirname, 'debug-messages.json'), 'utf8')) as ServerMessage[]).find(m => m.type === 'state');

afterEach(() => {
  document.body.textContent = '';
});

const preview = (sample: unknown, extra: Record<string, unknown> = {}) =>
  renderPreview({ dtype: 'float32', shape: [2, 3], place: 'cpu', kind: 'heatmap', min: -2, max: 7, mean: 1, std: 1, nan: 0, inf: 0, sample, ...extra } as any);

describe('the value preview heat map has a colour scale', () => {
  it('shows the sample\'s finite min and max on a bar of the canvas\'s own ramp', () => {
    const el = preview([[-2, 0, 1], [3, 'NaN', 'Infinity']]);
    const legend = el.querySelector('.jp-Kernelcore-previewLegend')!;
    expect(legend.previousElementSibling!.classList.contains('jp-Kernelcore-heatmap')).toBe(true);
    expect(legend.querySelector('.jp-Kernelcore-previewLegendMin')!.textContent).toBe('-2');
    expect(legend.querySelector('.jp-Kernelcore-previewLegendMax')!.textContent).toBe('3');
    const bar = legend.querySelector('.jp-Kernelcore-previewLegendBar') as HTMLElement;
    expect(bar.style.background).toContain(rampColor(0).replace(/,/g, ', '));
    expect(bar.style.background).toContain(rampColor(1).replace(/,/g, ', '));
  });

  it('marks 0 where the range straddles it, and not otherwise', () => {
    const zero = preview([[-1, 3]]).querySelector('.jp-Kernelcore-previewLegendZero') as HTMLElement;
    expect(zero.style.left).toBe('25%');
    expect(preview([[1, 3]]).querySelector('.jp-Kernelcore-previewLegendZero')).toBeNull();
  });

  it('has no scale when nothing in the sample is finite, nor under a sparkline or a scalar', () => {
    expect(preview([['NaN', 'Infinity']]).querySelector('.jp-Kernelcore-previewLegend')).toBeNull();
    expect(preview([1, 2, 3], { kind: 'sparkline' }).querySelector('.jp-Kernelcore-previewLegend')).toBeNull();
    expect(preview([5], { kind: 'scalar' }).querySelector('.jp-Kernelcore-previewLegend')).toBeNull();
  });

  it('shares one gradient string among all previews (nothing recomputed per preview)', () => {
    const bars = [preview([[0, 1]]), preview([[5, 9]])].map(el => el.querySelector('.jp-Kernelcore-previewLegendBar') as HTMLElement);
    const expected = Object.assign(document.createElement('span').style, { background: RAMP_GRADIENT }).background;
    expect(bars.map(b => b.style.background)).toEqual([expected, expected]);
  });
});

describe('one colour ramp for previews and the tensor viewer', () => {
  it('the tensor viewer paints its cells with the same ramp and diverging map', () => {
    expect(cellColor(0.25, 0, 1, false)).toBe(rampColor(0.25));
    expect(cellColor(-0.5, -2, 1, true)).toBe(divergingColor(-0.25));
    expect(divergingColor(0)).toBe('rgb(255,255,255)');
  });

  it('the legend puts 0 at its place on the bar', () => {
    expect(zeroAt(-1, 1)).toBe(0.5);
    expect(zeroAt(0, 1)).toBeNull();
    expect(zeroAt(null, 1)).toBeNull();
    const legend = colorLegend(-3, 1, rampColor, { markZero: true });
    expect((legend.querySelector('.jp-Kernelcore-tvLegendZero') as HTMLElement).style.left).toBe('75%');
  });
});

describe('Pause from the command table', () => {
  it('has a shortcut no move has, shown in its button title', () => {
    expect(CONTROLS.map(c => c.name)).toContain('pause');
    expect(MOVES.map(m => m.keys)).not.toContain(PAUSE.keys);
    expect(commandTitle(PAUSE, false)).toBe(`kernelcore:pause: ${PAUSE.help} (F6)`);
    const sb = new KernelcoreSidebar(new DebuggerModel());
    expect(sb.pause.title).toBe(commandTitle(PAUSE));
  });

  it('is enabled only while a move runs', () => {
    expect(controlEnabled(PAUSE, { busy: false, session: {} })).toBe(false);
    expect(controlEnabled(PAUSE, { busy: true, session: {} })).toBe(true);
  });

  it('the sidebar\'s Pause follows the model: off, on while Continue runs, off once it is answered', async () => {
    const comm = new FakeComm();
    const kernel: KernelLike = { createComm: () => comm };
    const model = new DebuggerModel();
    model.setKernel(kernel);
    comm.deliver(STATE);
    const sb = new KernelcoreSidebar(model);
    expect(sb.pause.disabled).toBe(true);
    sb.buttons.get('cont')!.click();
    expect(model.busy).toBe(true);
    expect(sb.pause.disabled).toBe(false);
    comm.answer(comm.sent[comm.sent.length - 1].id);
    await tick();
    expect(model.busy).toBe(false);
    expect(sb.pause.disabled).toBe(true);
  });
});

describe('key help of the graph', () => {
  it('lists every row of the key table, in its order, with readable key names', () => {
    const list = keyHelpList();
    const dts = [...list.querySelectorAll('dt')].map(d => [...d.querySelectorAll('kbd')].map(k => k.textContent));
    const dds = [...list.querySelectorAll('dd')].map(d => d.textContent);
    expect(dds).toEqual(GRAPH_KEYS.map(k => k.help));
    expect(dts).toEqual(graphKeyRows().map(r => r.keys));
    expect(dts[0]).toEqual(['\u2190']);
    expect(dts.find(k => k.includes('f'))).toEqual(['f']);
    expect(dts.find(k => k.includes('+'))).toEqual(['+', '=']);
  });

  it('the graph has a "?" button that opens the list and Escape closes it, giving the keys back to the graph', async () => {
    const view = new ProgramGraphView(new FakeModel({ program: mlp(), pruned_program: null, selected: '', details: {}, search: '', collapsed: [] }) as any, container());
    await view.ready;
    const button = view.root.querySelector('.jp-Kernelcore-keyHelpButton') as HTMLButtonElement;
    const panel = view.root.querySelector('.jp-Kernelcore-keyHelp') as HTMLElement;
    expect(panel.classList.contains('jp-Kernelcore-hidden')).toBe(true);
    expect(panel.querySelector('dl')).toBeNull();
    button.click();
    expect(button.getAttribute('aria-expanded')).toBe('true');
    expect(panel.querySelectorAll('dd').length).toBe(GRAPH_KEYS.length);
    panel.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(panel.classList.contains('jp-Kernelcore-hidden')).toBe(true);
    expect(document.activeElement).toBe(view.left.canvas);
  });
});
