import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import ProgramGraph from '../src/views/ProgramGraph';
import TraceTimeline from '../src/views/TraceTimeline';
import { DEAD_CLASS } from '../src/restart';
import { container, FakeModel } from './fake-model';

const MLP = JSON.parse(readFileSync(join(__dirname, 'data', 'mlp_v2.json'), 'utf8'));

afterEach(() => {
  document.body.textContent = '';
});

describe('a widget whose kernel restarted', () => {
  for (const [name, view, state] of [
    ['ProgramGraph', ProgramGraph, { program: MLP, pruned_program: null, selected: '', details: {}, search: '', collapsed: [] }],
    ['TraceTimeline', TraceTimeline, { events: [], filter: {}, selected_event: -1 }]
  ] as const) {
    it(`${name} says so and takes no more input; the notice goes with the view`, async () => {
      const model = new FakeModel(state as any);
      const el = container();
      const dispose = await view.render({ model: model as any, el });
      expect(el.querySelector('.jp-Kernelcore-deadNote')).toBeNull();
      // what the widget manager does when the kernel restarts: every model's comm_live becomes false
      (model as any).comm_live = false;
      (model.handlers['comm_live_update'] ?? []).forEach(cb => cb());
      const note = el.querySelector('.jp-Kernelcore-deadNote');
      expect(note?.textContent).toContain('Kernel restarted');
      expect(note?.textContent).toContain('Re-run the cell');
      expect(el.classList.contains(DEAD_CLASS)).toBe(true);
      (model.handlers['comm:close'] ?? []).forEach(cb => cb());
      expect(el.querySelectorAll('.jp-Kernelcore-deadNote').length).toBe(1);
      dispose();
      expect(el.querySelector('.jp-Kernelcore-deadNote')).toBeNull();
      expect(model.handlers['comm_live_update']).toEqual([]);
    });
  }
});
