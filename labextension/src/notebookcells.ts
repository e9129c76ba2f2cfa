/**
 * `INotebookCells` (see `advicecells.ts`) through JupyterLab's notebook
 * tracker and `NotebookActions`: the open notebook whose kernel is the
 * owner's (else whose path is its notebook's, as `probe.sessionOf` matches),
 * a code cell inserted below its active cell, then the notebook shown.
 */

import { type INotebookTracker, NotebookActions, type NotebookPanel } from '@jupyterlab/notebook';

import type { CellOwner, INotebookCells } from './advicecells';
import { type ISessionInfo, sessionOf } from './probe';

export class TrackerCells implements INotebookCells {
  constructor(
    private readonly _tracker: INotebookTracker,
    private readonly _show: (panel: NotebookPanel) => void
  ) {}

  insertBelow(owner: CellOwner, text: string): string | null {
    const panels: NotebookPanel[] = [];
    this._tracker.forEach(panel => {
      panels.push(panel);
    });
    const sessions: ISessionInfo[] = [];
    for (const panel of panels) {
      const session = panel.sessionContext.session;
      if (session) {
        const kernel = session.kernel ? { id: session.kernel.id, name: session.kernel.name } : null;
        sessions.push({ id: session.id, path: session.path, kernel });
      }
    }
    const found = sessionOf(sessions, owner);
    const panel = found ? panels.find(p => p.sessionContext.session?.id === found.id) : undefined;
    if (!panel) {
      return 'the notebook whose kernel owns this cluster is not open: open it to insert the cell';
    }
    const notebook = panel.content;
    NotebookActions.insertBelow(notebook);
    if (notebook.activeCell?.model.type !== 'code') {
      NotebookActions.changeCellType(notebook, 'code');
    }
    notebook.activeCell?.model.sharedModel.setSource(text);
    this._show(panel);
    return null;
  }
}
