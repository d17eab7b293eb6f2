/**
 * How a command's button names its keyboard shortcut, the same in the sidebar and in the Debugger widget:
 * its JupyterLab command id, what it does and its keys as the platform writes them. No JupyterLab import, so
 * the widgets' bundle can use it.
 */
import { CONTROLS, ControlSpec } from './protocol';

const MAC_GLYPHS: Record<string, string> = { Accel: '\u2318', Cmd: '\u2318', Ctrl: '\u2303', Alt: '\u2325', Shift: '\u21e7' };

/** Is this a Mac (where Accel is Cmd and shortcuts are written as glyphs)? */
export function isMac(nav: { platform?: string; userAgent?: string } | undefined = globalThis.navigator): boolean {
  return /Mac|iPhone|iPad/.test(`${nav?.platform ?? ''} ${nav?.userAgent ?? ''}`);
}

/** A keystroke as the platform writes it: "Ctrl+Shift+F11" elsewhere, "\u2318\u21e7F11" on a Mac. */
export function formatShortcut(keys: string, mac = isMac()): string {
  const parts = keys.split(/\s+/).filter(Boolean);
  return mac ? parts.map(k => MAC_GLYPHS[k] ?? k).join('') : parts.map(k => (k === 'Accel' ? 'Ctrl' : k)).join('+');
}

/** A command's button title: its JupyterLab command id, what it does and its shortcut as the platform writes it. */
export function commandTitle(spec: { commandId: string; help: string; keys: string }, mac = isMac()): string {
  return `${spec.commandId}: ${spec.help} (${formatShortcut(spec.keys, mac)})`;
}

/** Pause's row of the command table (its button, palette entry and shortcut). */
export const PAUSE: ControlSpec = CONTROLS.find(c => c.name === 'pause')!;
