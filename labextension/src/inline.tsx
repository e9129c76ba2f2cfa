/**
 * What the inline view of `%%distributed --widget` shows, with the panel's own
 * code: the same `RunLive` folding, rank tiles and throughput plots. The
 * ipywidgets model and view that use it are in `widget.tsx`.
 */

import { nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { DEFAULT_CONFIG } from './config';
import { ranksData } from './nodesummary';
import { ThroughputView } from './plotsview';
import { RanksView } from './ranksview';
import { sourceLine } from './runkind';
import { RunLive } from './runstate';
import { RunHeader } from './runsview';
import type { ISeqEvent } from './stream';
import { DOMAIN, useTrans } from './translate';
import type { RankInfo, Run } from './wire';

/** The widget module's name and version, as the Python side names them. */
export const MODULE_NAME = 'jupyter-distributed';
export const MODULE_VERSION = '0.1.0';

/** The run as the kernel last synced it, folded by the panel's `RunLive`. */
export function liveFrom(run: Run, ranks: RankInfo[], events: ISeqEvent[]): RunLive {
  const live = new RunLive(run.id);
  live.setSnapshot({ run, ranks });
  live.apply(events);
  return live;
}

/** The widget's title: "local · 2 ranks · <the first line of the cell>" (what is known of it). */
export function inlineTitle(run: Run, trans: TranslationBundle = nullTranslator.load(DOMAIN)): string {
  const ranks = trans._n('%1 rank', '%1 ranks', run.world_size);
  return [run.backend, ranks, sourceLine(run)].filter(Boolean).join(' · ');
}

export function InlineRun(props: { live: RunLive; now: number }): JSX.Element {
  const { live } = props;
  const trans = useTrans();
  return (
    <div className="jp-Distributed-inline">
      {live.run ? <RunHeader run={live.run} title={inlineTitle(live.run, trans)} /> : null}
      <RanksView data={ranksData(live, props.now)} />
      <ThroughputView live={live} origin={Math.floor(live.run?.started ?? 0)} window={DEFAULT_CONFIG.plotWindow} />
    </div>
  );
}
