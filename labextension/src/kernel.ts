/**
 * The sidebar's step commands: run one line in the active notebook's kernel and collect the text it
 * prints or returns. That line calls kernelcore_widgets.active_debugger() (docs/frontend-contract.md),
 * so the Debugger widget shown in the notebook moves, and updates through its own traits.
 */

export type StepCommand = 'step' | 'next' | 'cont';

/** The Python executed for a command (one expression; it binds no names in the user's namespace). */
export function stepCode(cmd: StepCommand): string {
  return `__import__("kernelcore_widgets").active_debugger().${cmd}()`;
}

/** The minimum of a kernel connection we use. */
export interface KernelLike {
  requestExecute(content: {
    code: string;
    silent?: boolean;
    store_history?: boolean;
    allow_stdin?: boolean;
    stop_on_error?: boolean;
  }): {
    onIOPub: (msg: { header: { msg_type: string }; content: any }) => void;
    done: Promise<unknown>;
  };
}

/** Execute `code` and return its text output (stream, text/plain results, errors as "Name: value"). */
export async function executeText(kernel: KernelLike, code: string): Promise<{ text: string; error: boolean }> {
  const future = kernel.requestExecute({ code, silent: false, store_history: false, allow_stdin: false, stop_on_error: false });
  const parts: string[] = [];
  let error = false;
  future.onIOPub = msg => {
    const t = msg.header.msg_type;
    const c = msg.content ?? {};
    if (t === 'stream') {
      parts.push(String(c.text ?? ''));
    } else if (t === 'execute_result' || t === 'display_data') {
      const plain = c.data?.['text/plain'];
      if (plain !== undefined) {
        parts.push(String(plain) + '\n');
      }
    } else if (t === 'error') {
      error = true;
      parts.push(`${String(c.ename ?? 'Error')}: ${String(c.evalue ?? '')}\n`);
    }
  };
  await future.done;
  return { text: parts.join('').trimEnd(), error };
}
