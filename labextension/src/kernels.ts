/**
 * `INotebookKernels` (see `probe.ts`) through JupyterLab's session manager:
 * the running sessions, and code run in one of their kernels over a
 * connection of its own, closed again afterwards (the kernel keeps running).
 */

import { KernelMessage, type Session } from '@jupyterlab/services';
import type { ISignal } from '@lumino/signaling';

import type { ExecuteReply, INotebookKernels, ISessionInfo } from './probe';

export class SessionKernels implements INotebookKernels {
  constructor(private readonly _manager: Session.IManager) {}

  get changed(): ISignal<unknown, unknown> {
    return this._manager.runningChanged;
  }

  sessions(): Iterable<ISessionInfo> {
    return this._manager.running();
  }

  async execute(session: ISessionInfo, code: string): Promise<ExecuteReply> {
    const model = Array.from(this._manager.running()).find(s => s.id === session.id);
    if (!model) {
      return { ok: false, error: `the session of ${session.path} has ended` };
    }
    // Comms stay with the notebook's own connection (a second handler would close them).
    const connection = this._manager.connectTo({ model, kernelConnectionOptions: { handleComms: false } });
    try {
      const kernel = connection.kernel;
      if (!kernel) {
        return { ok: false, error: `${session.path} has no kernel` };
      }
      const future = kernel.requestExecute({ code, silent: false, store_history: false, allow_stdin: false });
      let stdout = '';
      future.onIOPub = msg => {
        if (KernelMessage.isStreamMsg(msg) && msg.content.name === 'stdout') {
          stdout += msg.content.text;
        }
      };
      const reply = (await future.done).content;
      if (reply.status === 'ok') {
        return { ok: true, stdout };
      }
      if (reply.status === 'error') {
        return { ok: false, error: `${reply.ename}: ${reply.evalue}` };
      }
      return { ok: false, error: 'the kernel did not run the probe (an earlier cell failed)' };
    } finally {
      connection.dispose();
    }
  }
}
