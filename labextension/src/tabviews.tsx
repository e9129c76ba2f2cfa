/**
 * Render-only: what each tab of `tabs.ts` shows, keyed by its id (the mapped
 * type makes the compiler ask for a view when a tab is added).
 */

import * as React from 'react';

import { tileHasStacks } from './derive';
import { LogsView } from './logsview';
import { BAND_RANKS } from './manyranks';
import type { DistributedModel } from './model';
import { ranksData } from './nodesummary';
import { ThroughputView } from './plotsview';
import { RanksView } from './ranksview';
import type { RunLive } from './runstate';
import { RunsList } from './runsview';
import { ScalingView } from './scalingview';
import type { Tab } from './tabs';

/** A tab's body, given the model and the selected run's live state (null when none is selected). */
export type TabView = (model: DistributedModel, live: RunLive | null) => JSX.Element | null;

/** A view of the selected run: nothing while none is selected (its tab is disabled then). */
function ofRun(view: (model: DistributedModel, live: RunLive) => JSX.Element): TabView {
  return (model, live) => (live ? view(model, live) : null);
}

export const TAB_VIEWS: { readonly [T in Tab]: TabView } = {
  runs: model => (
    <RunsList runs={model.runs} loaded={model.loaded} selectedId={model.selectedId} onSelect={id => model.select(id)} />
  ),
  ranks: ofRun((model, live) => (
    <RanksView
      data={ranksData(live, model.now(), model.stragglerThreshold)}
      onStacks={rank => void model.actions.requestStacks(rank)}
      hasStacks={tile => tileHasStacks(model.selectedRun, tile)}
      plotted={live.ranks.size > BAND_RANKS ? model.shownRanks.set : undefined}
      onPlot={rank => model.shownRanks.toggle(rank)}
    />
  )),
  logs: ofRun((model, live) => (
    <LogsView
      lines={model.logView.rows(live.logs)}
      version={live.version}
      filter={model.logView.filter}
      follow={model.logView.follow}
      collapsed={model.logView.collapsed}
      onCollapse={collapsed => model.logView.setCollapsed(collapsed)}
      onFilter={filter => model.logView.setFilter(filter)}
      onFollow={follow => model.logView.setFollow(follow)}
      image={model.image.opened}
      onOpen={line => void model.openImage(line)}
      onCloseImage={() => model.image.close()}
    />
  )),
  throughput: ofRun((model, live) => (
    // Whole seconds, so that per-second throughput buckets start at 0.
    <ThroughputView
      live={live}
      origin={Math.floor(model.selectedRun?.started ?? 0)}
      window={model.config.plotWindow}
      stragglerThreshold={model.stragglerThreshold}
      shownRanks={model.shownRanks}
    />
  )),
  scaling: (model, live) => {
    // The listed copy: summaries written after a run ends (a probe's result) arrive with the list.
    const run = model.runs.find(r => r.id === model.selectedId) ?? live?.run ?? model.selectedRun;
    const probing = model.probe?.probing === run?.id;
    const cells = model.adviceCells;
    return run ? (
      <ScalingView
        runs={model.runs}
        run={run}
        probe={model.probePairs.view(run)}
        probing={probing}
        onNewCell={cells ? (advice, row) => cells.insert(run, advice, row) : undefined}
        cellError={cells?.error}
      />
    ) : null;
  }
};
