/**
 * A Logs filter change on a run holding 1,000,000 lines: the old way (every held line read and
 * collapsed in the render's one task: `shown(filtered(filter))`) against the slices
 * (`LogViewState.rows` in the render, then `slices.ts`' tasks until the filter is read, its
 * older matches put first, and the rows collapsed). Prints a Markdown table; times are wall
 * clock of each task in node (no browser), medians of the repeats, and the longest task of all.
 *
 *   npx esbuild benchmarks/bench_log_filter.ts --bundle --platform=node --log-level=warning \
 *     --outfile=/tmp/bench_log_filter.js && node --expose-gc /tmp/bench_log_filter.js
 */

import { LogBuffer } from '../labextension/src/logbuffer';
import { LogViewState } from '../labextension/src/logstate';
import type { LogLine } from '../labextension/src/wire';

const LINES = 1_000_000;
const REPEATS = 3;
const SEARCHES = ['loss', 'rank-local 99'];

/** Lines as a training loop on 8 ranks writes them (`tests/ts/logprepare.test.ts`' shape). */
function filled(): LogBuffer {
  const buffer = new LogBuffer();
  for (let i = 0; i < LINES; i++) {
    const step = Math.floor(i / 8);
    const line: LogLine = {
      seq: i,
      rank: i % 8,
      t: 100 + step * 0.05 + (i % 8) * 0.001,
      stream: step % 5 === 0 ? 'stderr' : 'stdout',
      text: step % 3 === 0 ? `rank-local ${i} a longer line of text` : `step ${step} loss 0.123 samples 32`
    };
    buffer.push(line);
  }
  return buffer;
}

function timed(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

const rows: string[] = [];
for (const search of SEARCHES) {
  const old: number[] = [];
  const render: number[] = [];
  const longest: number[] = [];
  const counts: number[] = [];
  const total: number[] = [];
  let matches = 0;
  for (let r = 0; r < REPEATS; r++) {
    const once = filled();
    const before = new LogViewState(() => undefined);
    before.shown(once.filtered({ ranks: [], stderrOnly: false, search: '' }));
    gc();
    old.push(timed(() => (matches = before.shown(once.filtered({ ...before.filter, search })).length)));

    const buffer = filled();
    const queue: (() => void)[] = [];
    const host = { now: () => performance.now(), later: (fn: () => void) => (queue.push(fn), () => undefined) };
    const state = new LogViewState(() => undefined, host);
    state.keepUp(buffer);
    while (queue.length) {
      (queue.shift() as () => void)();
    }
    gc();
    state.setFilter({ search });
    const tasks = [timed(() => state.rows(buffer))];
    render.push(tasks[0] as number);
    while (queue.length) {
      tasks.push(timed(queue.shift() as () => void));
    }
    longest.push(Math.max(...tasks));
    counts.push(tasks.length);
    total.push(tasks.reduce((a, b) => a + b, 0));
  }
  rows.push(
    `| ${JSON.stringify(search)} | ${matches} | ${median(old).toFixed(0)} | ${median(render).toFixed(1)} | ` +
      `${median(counts)} | ${median(longest).toFixed(1)} (${Math.max(...longest).toFixed(1)}) | ${median(total).toFixed(0)} |`
  );
}
console.log('| search | rows | old: one task, ms | render task, ms | tasks | longest task, ms: median (max) | all tasks, ms |');
console.log('|---|---|---|---|---|---|---|');
console.log(rows.join('\n'));
