/**
 * The panel's own work for one second of a large run, in node (no browser, no server): the
 * feed of `bench_panel` (`feed_panel.py`: 10,000 lines a second spread over the ranks, a
 * `samples` report and a system sample per rank and second) as the live stream brings it
 * (messages of 1,000 events, the server's `BATCH`), then what the views compute from it. Per
 * phase, the process's CPU time in ms (medians of the repeats; V8's GC threads count too): the messages' `JSON.parse`, `RunLive.apply` (the fold), the
 * Ranks tab's derive (a tile for every rank, as `rankGroups` makes them and the tab did before
 * issue 26's node tiles; and `ranksData`, node summaries and the tiles shown), the Ranks tab
 * rendered to HTML once (React's server render: a bound on what a render builds, not the
 * browser's DOM work), the Throughput tab's figures' traces (samples/s and a system metric).
 *
 *   npx esbuild benchmarks/bench_panel_fold.ts --bundle --platform=node --log-level=warning \
 *     --outfile=/tmp/bench_panel_fold.js && node /tmp/bench_panel_fold.js [ranks ...]
 */

import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { rankGroups } from '../labextension/src/derive';
import { ranksData } from '../labextension/src/nodesummary';
import { RanksView } from '../labextension/src/ranksview';
import { metricTraces, samplesTraces } from '../labextension/src/plotdata';
import { RunLive } from '../labextension/src/runstate';
import type { ISeqEvent } from '../labextension/src/stream';
import type { DistributedEvent } from '../labextension/src/wire';

const LINES_PER_SECOND = 10_000;
const PER_NODE = 8;
const SECONDS = 6; // fed before the last one is timed (the plots then hold some history)
const REPEATS = 5;
const BATCH = 1000;

/** One second of the feed at `t0`, as the stream's messages (JSON text). */
function second(ranks: number, t0: number, seq: { n: number }, rng: () => number): string[] {
  const events: DistributedEvent[] = [];
  for (let i = 0; i < LINES_PER_SECOND; i++) {
    const rank = Math.floor(rng() * ranks);
    const text = `step ${Math.floor(t0)} line ${i}: loss=${rng().toFixed(4)}`;
    events.push({ kind: 'output', run_id: 'r', rank, t: t0 + i / LINES_PER_SECOND, stream: 'stdout', text });
  }
  for (let r = 0; r < ranks; r++) {
    events.push({ kind: 'metric', run_id: 'r', rank: r, t: t0 + 0.5, values: { samples: 64 * (0.9 + 0.2 * rng()) } });
  }
  for (let r = 0; r < ranks; r++) {
    const values = { 'sys.cpu_percent': 50 + 50 * rng(), 'sys.rss_mb': 500 + r };
    events.push({ kind: 'metric', run_id: 'r', rank: r, t: t0 + 0.5, values });
  }
  const out: string[] = [];
  for (let i = 0; i < events.length; i += BATCH) {
    const items = events.slice(i, i + BATCH).map(event => ({ seq: ++seq.n, event }));
    out.push(JSON.stringify({ events: items }));
  }
  return out;
}

function live(ranks: number): RunLive {
  const run = new RunLive('r');
  run.setSnapshot({
    run: {
      id: 'r',
      state: 'running',
      started: 1000,
      world_size: ranks
    } as never,
    ranks: Array.from({ length: ranks }, (_, r) => ({
      rank: r,
      host: `node${Math.floor(r / PER_NODE)}`,
      pid: 10_000 + r,
      state: 'running',
      coords: { node_rank: Math.floor(r / PER_NODE), data_parallel: Math.floor(r / 4) },
      updated: 1000,
      heartbeat: 1000
    })) as never
  });
  return run;
}

/** The process's CPU time (user + system) that `fn` took, in ms: on a loaded machine the wall
 * time is mostly other processes' turns. */
function timed(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function bench(ranks: number): string {
  const times: Record<string, number[]> = {
    parse: [],
    apply: [],
    every: [],
    ranks: [],
    html: [],
    plots: [],
    messages: []
  };
  for (let rep = 0; rep < REPEATS; rep++) {
    let state = 12345 + rep;
    const rng = (): number => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
    const run = live(ranks);
    const seq = { n: 0 };
    for (let s = 0; s < SECONDS; s++) {
      for (const text of second(ranks, 1000 + s, seq, rng)) {
        run.apply((JSON.parse(text) as { events: ISeqEvent[] }).events);
      }
    }
    const messages = second(ranks, 1000 + SECONDS, seq, rng);
    let parsed: ISeqEvent[][] = [];
    times.parse?.push(timed(() => (parsed = messages.map(m => (JSON.parse(m) as { events: ISeqEvent[] }).events))));
    times.apply?.push(timed(() => parsed.forEach(items => run.apply(items))));
    times.messages?.push(messages.length);
    const now = 1000 + SECONDS + 1;
    times.every?.push(timed(() => rankGroups(run, now)));
    let data = ranksData(run, now);
    times.ranks?.push(timed(() => (data = ranksData(run, now))));
    times.html?.push(timed(() => renderToStaticMarkup(React.createElement(RanksView, { data }))));
    times.plots?.push(
      timed(() => {
        samplesTraces(run, 1000, 0);
        metricTraces(run, 'sys.cpu_percent', 1000, 0);
      })
    );
  }
  const ms = (k: string): string => median(times[k] as number[]).toFixed(1);
  return (
    `| ${ranks.toLocaleString('en')} | ${ms('messages')} | ${ms('parse')} | ${ms('apply')} | ${ms('every')} ` +
    `| ${ms('ranks')} | ${ms('html')} | ${ms('plots')} |`
  );
}

const sizes = process.argv.slice(2).map(Number);
console.log(`one second of the feed (${LINES_PER_SECOND} lines, 2 metric events per rank), ms of CPU (median of ${REPEATS})`);
console.log(
  '| ranks | messages | JSON.parse | RunLive.apply | a tile per rank (rankGroups) | Ranks tab: ranksData | Ranks tab: HTML | Throughput: two figures’ traces |'
);
console.log('|---|---|---|---|---|---|---|---|');
for (const ranks of sizes.length ? sizes : [1000, 10_000]) {
  console.log(bench(ranks));
}
