import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { tileContext } from '../../labextension/src/derive';
import {
  NODE_SUMMARY_ABOVE,
  NODE_TILES_ABOVE,
  NOTABLE_TILES,
  nodeMark,
  nodeSummaries,
  ranksData,
  runSummary
} from '../../labextension/src/nodesummary';
import { NODE_TILES_STEP, RanksView } from '../../labextension/src/ranksview';
import { RunLive } from '../../labextension/src/runstate';
import type { DistributedEvent, RankInfo } from '../../labextension/src/wire';
import { makeRun } from './fakes';

const T = 2_000_000;

/** A running run of `nodes` nodes of `perNode` ranks, each with a rate of 100 samples/s (`slow`: 60). */
function run(nodes: number, perNode: number, slow: readonly number[] = []): RunLive {
  const live = new RunLive('r');
  const ranks: RankInfo[] = [];
  for (let r = 0; r < nodes * perNode; r++) {
    const node = Math.floor(r / perNode);
    const coords = { node_rank: node, host: `node${node}` };
    ranks.push({
      rank: r,
      host: `node${node}`,
      pid: 100 + r,
      state: 'running',
      coords,
      updated: T,
      heartbeat: T
    } as RankInfo);
  }
  live.setSnapshot({ run: makeRun('r', T), ranks });
  const events: DistributedEvent[] = [];
  for (const t of [T + 1, T + 2]) {
    for (let r = 0; r < nodes * perNode; r++) {
      const samples = slow.includes(r) ? 60 : 100;
      events.push({ kind: 'metric', run_id: 'r', rank: r, t, values: { samples } });
    }
  }
  live.apply(events.map((event, i) => ({ seq: i + 1, event })));
  return live;
}

const count = (html: string, pattern: RegExp): number => html.match(pattern)?.length ?? 0;
const RANK_TILE = /role="listitem" aria-label="Rank \d+/g;
const NODE_TILE = /class="jp-Distributed-nodeTile /g;

describe('node summaries (many ranks)', () => {
  it('count the ranks per state and name the failed, stalled and straggling ones', () => {
    const live = run(1, 100, [63]);
    (live.ranks.get(7) as { state: string }).state = 'failed';
    (live.ranks.get(40) as { heartbeat: number }).heartbeat = T - 10;
    const [summary] = nodeSummaries(live, tileContext(live, T + 2));
    expect(summary?.ranks.length).toBe(100);
    expect(summary?.states).toEqual([
      ['failed', 1],
      ['stalled', 1],
      ['running', 98]
    ]);
    expect(summary?.stragglers).toBe(1);
    expect(summary?.slowest).toBe(60);
    expect(summary?.medianRate).toBe(100);
    expect(summary?.notable).toEqual([7, 40, 63]);
    expect(summary && nodeMark(summary)).toBe('failed');
  });

  it('start above NODE_SUMMARY_ABOVE ranks in the whole run, counted over every node', () => {
    expect(ranksData(run(1, NODE_SUMMARY_ABOVE), T + 2).nodes).toBeNull();
    const data = ranksData(run(2, NODE_SUMMARY_ABOVE / 2 + 1), T + 2);
    expect(data.groups).toBeNull();
    expect(data.nodes?.map(n => [n.host, n.ranks.length])).toEqual([
      ['node0', 33],
      ['node1', 33]
    ]);
    expect(data.tiles([0, 40]).map(t => [t.rank, t.host])).toEqual([
      [0, 'node0'],
      [40, 'node1']
    ]);
  });

  it('above NODE_TILES_ABOVE nodes show a tile per node and one line for the run (10,000 ranks)', () => {
    const live = run(1250, 8, [17]);
    const data = ranksData(live, T + 2);
    const html = renderToStaticMarkup(React.createElement(RanksView, { data }));
    // the first NODE_TILES_STEP in the first render, the others in the tasks after it (ui-tests)
    expect(count(html, NODE_TILE)).toBe(NODE_TILES_STEP);
    expect(html).toContain('aria-label="Node node0: 8 running"');
    expect(html).toContain('aria-label="Node node2: 8 running · 1 straggler(s)"');
    expect(html).toContain('class="jp-Distributed-nodeTile jp-mod-straggler"');
    expect(html).toContain('10000 ranks on 1250 nodes · 10000 running · 1 straggler(s)');
    // the one rank worth a look keeps its tile; no section per node
    expect(count(html, RANK_TILE)).toBe(1);
    expect(count(html, /<section/g)).toBe(0);
    const summary = runSummary(data.nodes ?? [], data.context);
    expect([summary.ranks.length, summary.notable]).toEqual([10_000, [17]]);
  });

  it('show at most NOTABLE_TILES tiles of ranks worth a look, the others counted (all stalled: a hang)', () => {
    for (const [nodes, perNode] of [
      [1250, 8],
      [NODE_TILES_ABOVE, 8]
    ] as const) {
      const live = run(nodes, perNode);
      const html = renderToStaticMarkup(React.createElement(RanksView, { data: ranksData(live, T + 60) }));
      expect(count(html, RANK_TILE)).toBe(NOTABLE_TILES);
      expect(html).toContain(`${nodes * perNode - NOTABLE_TILES} more ranks worth a look`);
      expect(count(html, NODE_TILE)).toBe(nodes > NODE_TILES_ABOVE ? NODE_TILES_STEP : 0);
    }
  });
});
