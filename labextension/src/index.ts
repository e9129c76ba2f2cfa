import { IJupyterWidgetRegistry } from '@jupyter-widgets/base';
import { ILayoutRestorer, type JupyterFrontEnd, type JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { readConfig } from './config';
import { confirmStop } from './confirm';
import { MODULE_NAME, MODULE_VERSION } from './inline';
import { SessionKernels } from './kernels';
import { DistributedModel } from './model';
import { TrackerCells } from './notebookcells';
import { DistributedPanel, PANEL_ID } from './panel';
import { IDistributedModel } from './tokens';
import { DOMAIN } from './translate';
import { RunModel, RunView } from './widget';

namespace CommandIDs {
  export const open = 'jupyter-distributed:open';
}

/** The plugin's id; its settings schema is `labextension/schema/plugin.json`. */
const PLUGIN_ID = 'jupyter-distributed:plugin';

/**
 * Wiring only: the model (settings in, state kept in the workspace, offered to
 * other extensions as `IDistributedModel`), the side panel, the command that
 * opens it, and where that command appears.
 */
const plugin: JupyterFrontEndPlugin<IDistributedModel> = {
  id: PLUGIN_ID,
  description: 'A side panel that follows distributed runs.',
  autoStart: true,
  provides: IDistributedModel,
  optional: [ICommandPalette, IMainMenu, ILayoutRestorer, ISettingRegistry, IStateDB, ITranslator, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    mainMenu: IMainMenu | null,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null,
    state: IStateDB | null,
    translator: ITranslator | null,
    notebooks: INotebookTracker | null
  ): IDistributedModel => {
    const trans = (translator ?? nullTranslator).load(DOMAIN);
    const model = new DistributedModel({
      state,
      kernels: new SessionKernels(app.serviceManager.sessions),
      cells: notebooks ? new TrackerCells(notebooks, nb => app.shell.activateById(nb.id)) : null,
      confirmStop: confirmStop(trans)
    });
    const panel = new DistributedPanel(model, translator ?? nullTranslator);
    // Registered now so that a saved layout can put the panel back where the
    // user left it; the shell only adds it after `app.restored` (see below).
    restorer?.add(panel, PANEL_ID);

    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const follow = (): void => model.setConfig(readConfig(settings.composite));
          follow();
          settings.changed.connect(follow);
        })
        .catch((reason: unknown) => {
          console.error(`jupyter-distributed: cannot load the settings: ${String(reason)}`);
        });
    }

    const addToShell = (): void => {
      if (!Array.from(app.shell.widgets('right')).includes(panel)) {
        app.shell.add(panel, 'right', { rank: 1000 });
      }
    };

    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Open Distributed Panel'),
      caption: trans.__('Show the runs of %%distributed cells'),
      execute: () => {
        addToShell();
        app.shell.activateById(panel.id);
      }
    });
    palette?.addItem({ command: CommandIDs.open, category: trans.__('Distributed') });
    mainMenu?.viewMenu.addGroup([{ command: CommandIDs.open }], 100);

    // Adding the panel before the layout is restored lets the restored layout
    // collapse it again.
    void app.restored.then(addToShell);
    return model;
  }
};

/**
 * The inline view of `%%distributed --widget`: the ipywidgets model and view
 * the kernel's `RunWidget` names, rendered with the panel's own code.
 */
const widgetPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-distributed:widget',
  description: 'The inline view of %%distributed --widget cells.',
  autoStart: true,
  requires: [IJupyterWidgetRegistry],
  activate: (_app: JupyterFrontEnd, registry: IJupyterWidgetRegistry): void => {
    registry.registerWidget({ name: MODULE_NAME, version: MODULE_VERSION, exports: { RunModel, RunView } });
  }
};

export default [plugin, widgetPlugin];
