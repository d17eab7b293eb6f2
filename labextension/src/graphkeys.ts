/**
 * The graph's keys: live only while a graph canvas has the keyboard focus (a click or Tab into it), so
 * they never take a key from JupyterLab elsewhere. A key with Ctrl, Alt or Meta is never one of them
 * (Ctrl+F stays the browser's and JupyterLab's find), and neither is a function key (F10, F11: the
 * debugger's moves work while the graph has the focus). They are not JupyterLab commands (the contract's
 * command table): a command's shortcut is live in the whole application, these only inside one canvas.
 */

export type GraphKeyAction =
  | { kind: 'pan'; dx: number; dy: number }
  | { kind: 'zoom'; factor: number }
  | { kind: 'reset' }
  | { kind: 'fit' }
  | { kind: 'search' }
  | { kind: 'toggle' }
  | { kind: 'clear' };

/** An arrow moves the view by this part of its width (or height); with Shift, by half of it. */
export const PAN_STEP = 0.125;
export const PAN_STEP_LARGE = 0.5;
/** + zooms in by this factor (the view box shrinks by it); − zooms out by its inverse. */
export const ZOOM_STEP = 0.8;

export interface GraphKey {
  keys: string[];
  help: string;
  action: GraphKeyAction;
  /** Shift changes the action (arrows: a larger step) */
  shifted?: GraphKeyAction;
}

const pan = (dx: number, dy: number, step: number): GraphKeyAction => ({ kind: 'pan', dx: dx * step, dy: dy * step });
const arrow = (key: string, dx: number, dy: number, help: string): GraphKey => ({
  keys: [key],
  help,
  action: pan(dx, dy, PAN_STEP),
  shifted: pan(dx, dy, PAN_STEP_LARGE)
});

/** Every key of a focused graph, and what it does (the toolbar's help and the tests read this table). */
export const GRAPH_KEYS: readonly GraphKey[] = [
  arrow('ArrowLeft', -1, 0, 'look left (Shift: further)'),
  arrow('ArrowRight', 1, 0, 'look right (Shift: further)'),
  arrow('ArrowUp', 0, -1, 'look up (Shift: further)'),
  arrow('ArrowDown', 0, 1, 'look down (Shift: further)'),
  { keys: ['+', '='], help: 'zoom in', action: { kind: 'zoom', factor: ZOOM_STEP } },
  { keys: ['-', '_', '\u2212'], help: 'zoom out', action: { kind: 'zoom', factor: 1 / ZOOM_STEP } },
  { keys: ['0'], help: 'back to the opening zoom (around the center of the view)', action: { kind: 'reset' } },
  { keys: ['f', 'F'], help: 'fit (again: all of it)', action: { kind: 'fit' } },
  { keys: ['/'], help: 'search names', action: { kind: 'search' } },
  { keys: ['Enter'], help: 'open or fold the selected group', action: { kind: 'toggle' } },
  { keys: ['Escape'], help: 'clear the search and the selection', action: { kind: 'clear' } }
];

const BY_KEY = new Map<string, GraphKey>(GRAPH_KEYS.flatMap(k => k.keys.map(key => [key, k] as [string, GraphKey])));

/** What a keydown in a focused graph does, or null: the key is not the graph's (let it through). */
export function graphKeyAction(ev: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'altKey' | 'metaKey' | 'shiftKey'>): GraphKeyAction | null {
  if (ev.ctrlKey || ev.altKey || ev.metaKey) {
    return null;
  }
  const k = BY_KEY.get(ev.key);
  if (!k) {
    return null;
  }
  return ev.shiftKey && k.shifted ? k.shifted : k.action;
}

const ARROWS: Record<string, string> = { ArrowLeft: '\u2190', ArrowRight: '\u2192', ArrowUp: '\u2191', ArrowDown: '\u2193' };

/**
 * The keys of one row as a person reads them: arrows as glyphs, a letter once (f, not f F), the typographic
 * minus left out (it is the - key on some layouts).
 */
export function keyNames(keys: readonly string[]): string[] {
  const shown = keys.filter(key => key !== '\u2212' && !(key.length === 1 && key !== key.toLowerCase() && keys.includes(key.toLowerCase())));
  return shown.map(key => ARROWS[key] ?? key);
}

/** The table as rows to show: each key row's names and what it does, in the table's order. */
export function graphKeyRows(): Array<{ keys: string[]; help: string }> {
  return GRAPH_KEYS.map(k => ({ keys: keyNames(k.keys), help: k.help }));
}

/** One line per key, for a tooltip. */
export function graphKeysHelp(): string {
  return graphKeyRows()
    .map(r => `${r.keys.join(' ')}: ${r.help}`)
    .join('\n');
}

/** The keys as an aria-keyshortcuts value (what assistive technology announces). */
export function graphKeyShortcuts(): string {
  const name = (key: string) => (key === '+' ? 'Plus' : key === '-' ? 'Minus' : key === ' ' ? 'Space' : key);
  return GRAPH_KEYS.map(k => name(k.keys[0])).join(' ');
}
