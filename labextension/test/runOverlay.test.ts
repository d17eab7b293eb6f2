import { describe, expect, it } from 'vitest';
import { ProgramGraphModel } from '../src/graph';
import { runOverlay } from '../src/views/ProgramGraph';
import { mlp } from './fixtures';

describe('what ran overlay', () => {
  it('greys ops that never ran, grades the rest by time and marks differing outputs', () => {
    const g = new ProgramGraphModel(mlp());
    const ops = [...g.nodes.values()].filter(n => n.op).map(n => n.id);
    expect(ops.length).toBeGreaterThan(2);
    const ran: Record<string, { runs: number; ns: number }> = {};
    ops.slice(1).forEach((id, k) => (ran[id] = { runs: 1, ns: (k + 1) * 1000 }));
    const o = runOverlay(g, ran, { [ops[1]]: { max_abs: 0.5 } });
    expect([...o.notRun!]).toEqual([ops[0]]);
    expect(o.heat!.get(ops[ops.length - 1])).toBe(4); // the slowest is the hottest
    expect(Math.min(...o.heat!.values())).toBeGreaterThanOrEqual(1);
    expect([...o.differs!]).toEqual([ops[1]]);
  });

  it('is nothing when no run is shown', () => {
    expect(runOverlay(new ProgramGraphModel(mlp()), {}, {})).toEqual({});
    expect(runOverlay(null, { o0_0: { runs: 1, ns: 1 } }, {})).toEqual({});
  });
});

describe('run line in the details', () => {
  it('says how often an op ran, or that it did not', async () => {
    const { runLine } = await import('../src/views/ProgramGraph');
    const ran = { 'o0:1': { runs: 3, ns: 2_000_000, timesteps: 3 } };
    expect(runLine(ran, {}, 'o0:1')).toEqual({ ran: '3 times in 3 timesteps, 2.000 ms' });
    expect(runLine(ran, {}, 'o0:0')).toEqual({ ran: 'not in the last run' });
    expect(runLine({}, {}, 'o0:0')).toBeNull();
  });
});
