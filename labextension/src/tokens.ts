/**
 * The debugger model the plugin provides (as jupyterlab-git's tokens.ts does): the sidebar, the commands and
 * any other extension receive it through this token and reach the kernel only through it (the
 * `kernelcore.debugger` comm), never by executing code.
 */
import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';
import { Command, CommandArgs, Reply, Session } from './protocol';

/** Where the model stands with the active notebook's kernel. */
export type ConnectionStatus =
  | 'no-notebook' // no active notebook
  | 'no-kernel' // the notebook has no running kernel
  | 'connecting'
  | 'no-target' // the kernel has not imported kernelcore_widgets (no comm target)
  | 'connected'
  | 'restarted'; // the kernel restarted: its sessions are gone until a cell runs again

export interface IKernelcoreDebuggerModel {
  /** The live session as the kernel last described it (null: none). */
  readonly session: Session | null;
  readonly status: ConnectionStatus;
  /** A sentence for the status line. */
  readonly statusText: string;
  /** A move sent to the kernel is still running (its reply has not come). */
  readonly busy: boolean;
  /** Emitted when the session or the status changes. */
  readonly changed: ISignal<IKernelcoreDebuggerModel, void>;
  /** Send one request; resolves with the kernel's reply (the new state arrives through `changed`). */
  request<C extends Command>(command: C, args?: CommandArgs[C]): Promise<Reply>;
  /** Open the comm again (after a restart, once a cell imported kernelcore_widgets). */
  reconnect(): void;
}

export const IKernelcoreDebuggerModel = new Token<IKernelcoreDebuggerModel>(
  '@kernelcore/labextension:IKernelcoreDebuggerModel',
  'The kernelcore debugger model: the active notebook kernel\'s debug session, over the kernelcore.debugger comm.'
);
