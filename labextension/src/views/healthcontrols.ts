/**
 * The training-health controls shared by the HealthView widget and the "Training health" sidebar panel: the
 * statistic, the order, the op filter, the page buttons, the counts line and refresh. Each control says what
 * the person changed; the caller decides what that asks of the kernel (its own model or comm).
 */
import { button, h } from '../dom';
import type { HealthOverview } from '../protocol.generated';

/** What is chosen now (the widget's traits or the panel's view). */
export interface ControlValues {
  stat: string;
  sort: string;
  filter: string;
  page: number;
}

export interface ControlActions {
  /** The person changed these choices. */
  choose(change: Partial<ControlValues>): void;
  /** The person asked to read the recorder again. */
  refresh(): void;
}

/** The controls in their order, to append after whatever the caller puts first. */
export function healthControls(ov: HealthOverview | null, now: ControlValues, actions: ControlActions): HTMLElement[] {
  const stat = h('select', { cls: 'jp-Kernelcore-hvStat', attrs: { 'aria-label': 'statistic' } });
  for (const s of ov?.stats ?? ['l2']) {
    stat.appendChild(h('option', { text: s, attrs: { value: s } }));
  }
  stat.value = now.stat;
  stat.addEventListener('change', () => actions.choose({ stat: stat.value }));
  const sort = h('select', { cls: 'jp-Kernelcore-hvSort', attrs: { 'aria-label': 'order' } });
  sort.append(h('option', { text: 'worst first', attrs: { value: 'worst' } }), h('option', { text: 'program order', attrs: { value: 'program' } }));
  sort.value = now.sort;
  sort.addEventListener('change', () => actions.choose({ sort: sort.value }));
  const filter = h('input', { cls: 'jp-Kernelcore-hvFilter', attrs: { type: 'search', placeholder: 'filter ops', 'aria-label': 'filter ops' } });
  filter.value = now.filter;
  filter.addEventListener('change', () => actions.choose({ filter: filter.value, page: 0 }));
  const pages = ov?.pages ?? 1;
  const prev = button('\u2039', () => actions.choose({ page: now.page - 1 }), { cls: 'jp-Kernelcore-hvPrev', title: 'previous page' });
  const next = button('\u203a', () => actions.choose({ page: now.page + 1 }), { cls: 'jp-Kernelcore-hvNext', title: 'next page' });
  prev.disabled = now.page <= 0;
  next.disabled = now.page >= pages - 1;
  const counts = ov ? `${ov.matching} of ${ov.ops} ops, ${ov.iterations} iterations; page ${now.page + 1}/${pages}` : '';
  return [
    h('label', {}, ['statistic ', stat]),
    h('label', {}, ['order ', sort]),
    filter,
    prev,
    next,
    h('span', { cls: 'jp-Kernelcore-muted jp-Kernelcore-hvCounts', text: counts }),
    button('refresh', () => actions.refresh(), { cls: 'jp-Kernelcore-hvRefresh', title: 'read the recorder again' })
  ];
}
