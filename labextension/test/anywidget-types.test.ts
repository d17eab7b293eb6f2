// Type-level: every view's default export is an anywidget 0.11 widget definition
// (checked by `npm run typecheck`; the runtime assertion just keeps vitest happy).
import type { AnyWidget } from '@anywidget/types';
import { expect, it } from 'vitest';
import Debugger from '../src/views/Debugger';
import ProgramGraph from '../src/views/ProgramGraph';
import RNNStepper from '../src/views/RNNStepper';
import ScopeForest from '../src/views/ScopeForest';
import TraceTimeline from '../src/views/TraceTimeline';

const widgets: AnyWidget[] = [ProgramGraph, ScopeForest, RNNStepper, TraceTimeline, Debugger];

it('views are anywidget definitions', () => {
  expect(widgets.every(w => typeof (w as { render?: unknown }).render === 'function')).toBe(true);
});
