import { describe, expect, it } from 'vitest';
import { healthControls } from '../src/views/healthcontrols';
import type { HealthOverview } from '../src/protocol.generated';

function overview(pages: number): HealthOverview {
  return { stats: ['l2', 'max_abs'], pages, matching: 3, ops: 7, iterations: 12 } as unknown as HealthOverview;
}

function mount(ov: HealthOverview | null, page: number) {
  const changes: unknown[] = [];
  let refreshed = 0;
  const root = document.createElement('div');
  root.append(...healthControls(ov, { stat: 'max_abs', sort: 'program', filter: 'fc', page }, {
    choose: c => changes.push(c),
    refresh: () => refreshed++
  }));
  const q = <T extends Element>(sel: string) => root.querySelector(sel) as T;
  return { root, changes, q, refreshed: () => refreshed };
}

describe('healthControls', () => {
  it('shows the current choices and says what each control changed', () => {
    const { changes, q, refreshed } = mount(overview(3), 1);
    expect(q<HTMLSelectElement>('.jp-Kernelcore-hvStat').value).toBe('max_abs');
    expect(q<HTMLSelectElement>('.jp-Kernelcore-hvSort').value).toBe('program');
    expect(q<HTMLInputElement>('.jp-Kernelcore-hvFilter').value).toBe('fc');
    expect(q('.jp-Kernelcore-hvCounts').textContent).toBe('3 of 7 ops, 12 iterations; page 2/3');
    const stat = q<HTMLSelectElement>('.jp-Kernelcore-hvStat');
    stat.value = 'l2';
    stat.dispatchEvent(new Event('change'));
    const sort = q<HTMLSelectElement>('.jp-Kernelcore-hvSort');
    sort.value = 'worst';
    sort.dispatchEvent(new Event('change'));
    const filter = q<HTMLInputElement>('.jp-Kernelcore-hvFilter');
    filter.value = 'tanh';
    filter.dispatchEvent(new Event('change'));
    q<HTMLButtonElement>('.jp-Kernelcore-hvPrev').click();
    q<HTMLButtonElement>('.jp-Kernelcore-hvNext').click();
    q<HTMLButtonElement>('.jp-Kernelcore-hvRefresh').click();
    expect(changes).toEqual([{ stat: 'l2' }, { sort: 'worst' }, { filter: 'tanh', page: 0 }, { page: 0 }, { page: 2 }]);
    expect(refreshed()).toBe(1);
  });

  it('disables the page buttons at the ends and counts nothing before the first overview', () => {
    const { q } = mount(null, 0);
    expect(q<HTMLButtonElement>('.jp-Kernelcore-hvPrev').disabled).toBe(true);
    expect(q<HTMLButtonElement>('.jp-Kernelcore-hvNext').disabled).toBe(true);
    expect(q('.jp-Kernelcore-hvCounts').textContent).toBe('');
    expect([...q<HTMLSelectElement>('.jp-Kernelcore-hvStat').options].map(o => o.value)).toEqual(['l2']);
  });
});
