/**
 * The `kernelcore.debugger` comm messages. Their types, the command list, each command's arguments and the
 * moves' buttons and shortcuts are generated (protocol.generated.ts, from
 * widgets/kernelcore_widgets/debug_protocol.schema.json and kernelcore_widgets/contract/commands.py);
 * this module adds what the sidebar needs at run time. Strings in these messages may come from files the
 * user did not write: the sidebar shows them as text.
 */
import type { Reply, StateMessage } from './protocol.generated';

export * from './protocol.generated';

export const COMM_TARGET = 'kernelcore.debugger';

export type ServerMessage = Reply | StateMessage;

/** A message from the kernel, checked as far as the sidebar relies on it. */
export function isServerMessage(x: unknown): x is ServerMessage {
  if (!x || typeof x !== 'object') {
    return false;
  }
  const m = x as any;
  if (m.type === 'reply') {
    return typeof m.id === 'number' && typeof m.ok === 'boolean';
  }
  if (m.type === 'state') {
    return !!m.state && typeof m.state === 'object' && 'session' in m.state;
  }
  return false;
}
