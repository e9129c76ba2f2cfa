import { ReactWidget } from '@jupyterlab/apputils';
import type { Message } from '@lumino/messaging';
import * as React from 'react';

import { rankGroups, throughputSeries } from './derive';
import { LogsView } from './logsview';
import { TABS, type DistributedModel, type Tab } from './model';
import { ThroughputView } from './plotsview';
import { RanksView } from './ranksview';
import { RunHeader, RunsList } from './runsview';

/**
 * The DOM id of the side panel; also its name for the layout restorer.
 */
export const PANEL_ID = 'jupyter-distributed:panel';

const TAB_LABELS: Record<Tab, string> = {
  runs: 'Runs',
  ranks: 'Ranks',
  logs: 'Logs',
  throughput: 'Throughput'
};

/**
 * Render-only view of the model: tabs for runs, ranks, logs and throughput.
 */
export function PanelView(props: { model: DistributedModel }): JSX.Element {
  const { model } = props;
  const live = model.live;
  const run = model.selectedRun;
  const version = live?.version ?? 0;
  let body: JSX.Element;
  if (model.tab === 'runs' || !live) {
    body = <RunsList runs={model.runs} selectedId={model.selectedId} onSelect={id => model.select(id)} />;
  } else if (model.tab === 'ranks') {
    body = <RanksView groups={rankGroups(live, model.now())} />;
  } else if (model.tab === 'logs') {
    body = (
      <LogsView
        lines={live.logs.filtered(model.logFilter)}
        version={version}
        filter={model.logFilter}
        follow={model.followLogs}
        onFilter={filter => model.setLogFilter(filter)}
        onFollow={follow => model.setFollowLogs(follow)}
      />
    );
  } else {
    // Whole seconds, so that per-second throughput buckets start at 0.
    const origin = Math.floor(run?.started ?? 0);
    const { perRank, total } = throughputSeries(live, origin);
    body = (
      <ThroughputView
        version={version}
        origin={origin}
        perRank={perRank}
        total={total}
        metrics={live.metrics}
        system={live.system}
      />
    );
  }
  return (
    <div className="jp-Distributed-body">
      {model.error ? (
        <p className="jp-Distributed-error" role="alert">
          {model.error}
        </p>
      ) : null}
      {run ? (
        <RunHeader run={run} onCancel={() => void model.cancel()} onStop={() => void model.stopCluster()} />
      ) : null}
      <div role="tablist" aria-label="Distributed views" className="jp-Distributed-tabs">
        {TABS.map(tab => (
          <button
            key={tab}
            role="tab"
            aria-selected={model.tab === tab}
            disabled={tab !== 'runs' && !live}
            className="jp-Distributed-tab"
            onClick={() => model.setTab(tab)}
          >
            {TAB_LABELS[tab]}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={TAB_LABELS[model.tab]} className="jp-Distributed-tabBody">
        {body}
      </div>
    </div>
  );
}

/**
 * The "Distributed" side panel. Re-renders when the model says so (the model
 * throttles), and tells the model when it is hidden so polling stands by.
 */
export class DistributedPanel extends ReactWidget {
  constructor(readonly model: DistributedModel) {
    super();
    this.id = PANEL_ID;
    this.title.label = 'Distributed';
    this.title.caption = 'Distributed runs';
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
    return <PanelView model={this.model} />;
  }

  private _onChanged(): void {
    if (this.isVisible) {
      this.update();
    }
  }
}
