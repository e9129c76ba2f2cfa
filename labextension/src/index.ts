import {
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IMainMenu } from '@jupyterlab/mainmenu';

import { DistributedPanel, PANEL_ID } from './panel';

namespace CommandIDs {
  export const open = 'jupyter-distributed:open';
}

/**
 * Wiring only: the side panel, the command that opens it, and where that
 * command appears. Behaviour lives in the panel and, later, its model.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-distributed:plugin',
  description: 'A side panel that follows distributed runs.',
  autoStart: true,
  optional: [ICommandPalette, IMainMenu, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    mainMenu: IMainMenu | null,
    restorer: ILayoutRestorer | null
  ): void => {
    const panel = new DistributedPanel();
    // Registered now so that a saved layout can put the panel back where the
    // user left it; the shell only adds it after `app.restored` (see below).
    restorer?.add(panel, PANEL_ID);

    const addToShell = (): void => {
      if (!Array.from(app.shell.widgets('right')).includes(panel)) {
        app.shell.add(panel, 'right', { rank: 1000 });
      }
    };

    app.commands.addCommand(CommandIDs.open, {
      label: 'Open Distributed Panel',
      caption: 'Show the runs of %%distributed cells',
      execute: () => {
        addToShell();
        app.shell.activateById(panel.id);
      }
    });
    palette?.addItem({ command: CommandIDs.open, category: 'Distributed' });
    mainMenu?.viewMenu.addGroup([{ command: CommandIDs.open }], 100);

    // Adding the panel before the layout is restored lets the restored layout
    // collapse it again.
    void app.restored.then(addToShell);
  }
};

export default plugin;
