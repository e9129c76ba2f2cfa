/**
 * The panel's side of the live stream at 1,000-10,000 ranks (issue 26): each message's
 * `JSON.parse` and `RunLive.apply`, an object per event (`events`) against rows batched per node
 * (`format=nodes`), in node. The messages are the server's own, written by
 * `bench_stream_nodes.py --dump DIR` (`DIR/RANKS-FORMAT-LIMIT.jsonl`, one a line); each file is
 * folded into a fresh `RunLive` (a snapshot of its ranks first), `--repeats` times, the files in
 * turn. Per file, CPU time (`process.cpuUsage`; V8's GC threads count too): per message median
 * and max (parse + apply: a message is one task of the panel), and the whole feed's parse and
 * apply.
 *
 *   npx esbuild benchmarks/bench_stream_apply.ts --bundle --platform=node --log-level=warning \
 *     --outfile=/tmp/bench_stream_apply.js && node /tmp/bench_stream_apply.js DIR [repeats]
 *
 * Bundled from a checkout before batches, it folds the `events` files only (its `RunLive`).
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { RunLive } from '../labextension/src/runstate';

const PER_NODE = 8;

function live(ranks: number): RunLive {
  const run = new RunLive('bench');
  run.setSnapshot({
    run: { id: 'bench', state: 'running', started: 1_700_000_000, world_size: ranks } as never,
    ranks: Array.from({ length: ranks }, (_, r) => ({
      rank: r,
      host: `node${Math.floor(r / PER_NODE)}`,
      pid: 10_000 + r,
      state: 'running',
      coords: {},
      updated: 1_700_000_000,
      heartbeat: 1_700_000_000
    })) as never
  });
  return run;
}

function cpu(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const dir = process.argv[2] ?? '.';
const repeats = Number(process.argv[3] ?? 5);
const files = readdirSync(dir)
  .filter(f => f.endsWith('.jsonl'))
  .sort();
const oldCode = !('_batch' in RunLive.prototype);
const results = new Map<string, { perMessage: number[]; max: number[]; parse: number[]; apply: number[] }>();
for (let rep = 0; rep < repeats; rep++) {
  for (const file of files) {
    const [ranks, format] = file.replace('.jsonl', '').split('-');
    if (oldCode && format !== 'events') {
      continue;
    }
    const messages = readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean);
    const run = live(Number(ranks));
    const each: number[] = [];
    let parse = 0;
    let apply = 0;
    for (const text of messages) {
      let message: { events?: unknown[]; batches?: unknown[] } = {};
      const p = cpu(() => (message = JSON.parse(text)));
      const a = cpu(() => run.apply((message.batches ?? message.events ?? []) as never));
      parse += p;
      apply += a;
      each.push(p + a);
    }
    const got = results.get(file) ?? { perMessage: [], max: [], parse: [], apply: [] };
    got.perMessage.push(median(each));
    got.max.push(Math.max(...each));
    got.parse.push(parse);
    got.apply.push(apply);
    results.set(file, got);
  }
}
console.log(`${oldCode ? 'old' : 'new'} RunLive, medians of ${repeats}; CPU ms`);
console.log('| file | messages | per message (median) | per message (max) | parse, whole feed | apply, whole feed |');
console.log('|---|---|---|---|---|---|');
for (const [file, r] of results) {
  const messages = readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean).length;
  console.log(
    `| ${file} | ${messages} | ${median(r.perMessage).toFixed(2)} | ${median(r.max).toFixed(1)} | ` +
      `${median(r.parse).toFixed(1)} | ${median(r.apply).toFixed(1)} |`
  );
}
