import { ReactWidget } from '@jupyterlab/apputils';
import { type ITranslator, nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import type { Message } from '@lumino/messaging';
import * as React from 'react';

import type { DistributedModel } from './model';
import { ProbeButton } from './probeview';
import { RunHeader, StacksView } from './runsview';
import { TABS } from './tabs';
import { TAB_VIEWS } from './tabviews';
import { DOMAIN, TransContext, useTrans } from './translate';

/**
 * The DOM id of the side panel; also its name for the layout restorer.
 */
export const PANEL_ID = 'jupyter-distributed:panel';

/**
 * Render-only view of the model: the selected run's header, then the tabs of `tabs.ts`.
 */
export function PanelView(props: { model: DistributedModel }): JSX.Element {
  const { model } = props;
  const trans = useTrans();
  const live = model.live;
  const run = model.selectedRun;
  const current = TABS.find(t => t.id === model.tab) ?? TABS[0];
  const shown = current.needsRun && !live ? TABS[0] : current;
  return (
    <div className="jp-Distributed-body">
      {[model.error, model.probe?.error].filter(Boolean).map(error => (
        <p key={error} className="jp-Distributed-error" role="alert">
          {error}
        </p>
      ))}
      {run ? (
        <RunHeader
          run={run}
          onCancel={() => void model.actions.cancel()}
          onStop={() => void model.actions.stopCluster()}
          onStacks={() => void model.actions.requestStacks()}
          onDelete={() => void model.actions.delete()}
          busy={kind => model.actions.isBusy(kind)}
        >
          {model.probe ? <ProbeButton probe={model.probe} run={run} /> : null}
        </RunHeader>
      ) : null}
      {model.actions.stopped ? (
        <p className="jp-Distributed-notice" role="status">
          {trans.__('Stopped cluster %1', model.actions.stopped)}
        </p>
      ) : null}
      {live?.stacks ? <StacksView stacks={live.stacks} /> : null}
      <div role="tablist" aria-label={trans.__('Distributed views')} className="jp-Distributed-tabs">
        {TABS.map(tab => (
          <button
            type="button"
            key={tab.id}
            role="tab"
            aria-selected={model.tab === tab.id}
            disabled={tab.needsRun && !live}
            className="jp-Distributed-tab"
            onClick={() => model.setTab(tab.id)}
          >
            {trans.__(tab.label)}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={trans.__(shown.label)} className="jp-Distributed-tabBody">
        {TAB_VIEWS[shown.id](model, live)}
      </div>
    </div>
  );
}

/**
 * The "Distributed" side panel. Re-renders when the model says so (the model
 * throttles), and tells the model when it is hidden so polling stands by.
 */
export class DistributedPanel extends ReactWidget {
  constructor(
    readonly model: DistributedModel,
    translator: ITranslator = nullTranslator
  ) {
    super();
    this._trans = translator.load(DOMAIN);
    this.id = PANEL_ID;
    this.title.label = this._trans.__('Distributed');
    this.title.caption = this._trans.__('Distributed runs');
    this.addClass('jp-Distributed-panel');
    model.setHidden(true); // until shown
    model.changed.connect(this._onChanged, this);
  }

  override dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.dispose();
    super.dispose();
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.setHidden(false);
    this.update();
  }

  protected override onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.setHidden(true);
  }

  protected render(): JSX.Element {
    return (
      <TransContext.Provider value={this._trans}>
        <PanelView model={this.model} />
      </TransContext.Provider>
    );
  }

  private readonly _trans: TranslationBundle;

  private _onChanged(): void {
    if (this.isVisible) {
      this.update();
    }
  }
}
