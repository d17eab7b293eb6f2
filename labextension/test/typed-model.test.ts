// Type-level: a view's model is typed by its widget's traits, generated from the Python widget
// (src/widgets.generated.ts); `npm run typecheck` fails if a misspelt trait or a value of the wrong type
// compiles. The runtime part reads a LocalModel through the same types.
import { expect, it } from 'vitest';
import { LocalModel, WidgetModel } from '../src/model';
import type { Frame } from '../src/protocol';
import type { ProgramJSON } from '../src/schema';
import type { IKernelcoreDebuggerModel } from '../src/tokens';
import type { DebuggerTraits, ProgramGraphTraits } from '../src/widgets.generated';
import { mlp } from './fixtures';

function readsTyped(m: WidgetModel<ProgramGraphTraits>): ProgramJSON {
  // @ts-expect-error: `frames` is a Debugger trait, not a ProgramGraph one
  m.get('frames');
  // @ts-expect-error: `selected` holds a node id (a string)
  m.set('selected', 3);
  return m.get('program');
}

function debuggerIsNotAGraph(m: WidgetModel<DebuggerTraits>): Frame[] {
  // @ts-expect-error: the Debugger's model holds its own traits; the graph's are its child's
  readsTyped(m);
  return m.get('frames');
}

it('a typed local model gives back what was set', () => {
  const graph = new LocalModel<ProgramGraphTraits>({ program: mlp() });
  expect(readsTyped(graph).blocks.length).toBe(1);
  expect(debuggerIsNotAGraph(new LocalModel<DebuggerTraits>({ frames: [], graph: 'IPY_MODEL_g' }))).toEqual([]);
});

/** A debug request's arguments are typed by its command (CommandArgs, generated from the command table). */
export function asksTyped(m: IKernelcoreDebuggerModel): void {
  void m.request('run_to', { block: 0, op: 1 });
  // @ts-expect-error: run_to's op is a number
  void m.request('run_to', { block: 0, op: '1' });
  // @ts-expect-error: no such command
  void m.request('rewind');
}
