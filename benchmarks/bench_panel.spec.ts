/**
 * Panel benchmark: a synthetic 256-rank run is written into the run store
 * (benchmarks/feed_panel.py) while the panel follows it in headless Chromium.
 * Reports event-to-screen latency (marker line written -> visible in the log
 * view) and long tasks (PerformanceObserver 'longtask') while it streams.
 *
 * Run: make bench-panel (BENCH_SECONDS, BENCH_LINES_PER_SECOND to change the load).
 * Writes ui-tests/test-results/bench_panel.json and prints a summary.
 */
import { expect, test } from '@jupyterlab/galata';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as readline from 'readline';

const SECONDS = Number(process.env.BENCH_SECONDS ?? '20');
const LINES = Number(process.env.BENCH_LINES_PER_SECOND ?? '2000');
const RANKS = Number(process.env.BENCH_RANKS ?? '256');

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) {
    return NaN;
  }
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

test('256-rank run: event-to-screen latency and long tasks', async ({ page }) => {
  test.setTimeout((SECONDS + 120) * 1000);
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const panel = page.locator('#jupyter-distributed\\:panel');
  await expect(panel).toBeVisible();

  // Observers in the page: marker lines as they appear, and long tasks.
  await page.evaluate(() => {
    // Markers are only on screen in the Logs tab: latency comes from its half of the feed.
    const w = window as unknown as Record<string, unknown>;
    const seen = new Map<number, number>();
    const longTasks: [number, number][] = []; // [startTime, duration] in ms
    w.__bench = { seen, longTasks };
    new PerformanceObserver(list => {
      for (const entry of list.getEntries()) {
        longTasks.push([entry.startTime, entry.duration]);
      }
    }).observe({ type: 'longtask', buffered: false });
    const scan = (): void => {
      const now = Date.now() / 1000;
      for (const row of document.querySelectorAll('.jp-Distributed-line')) {
        const m = /BENCH-MARK (\d+) ([\d.]+)/.exec(row.textContent ?? '');
        if (m && !seen.has(Number(m[1]))) {
          seen.set(Number(m[1]), now - Number(m[2]));
        }
      }
    };
    new MutationObserver(scan).observe(document.body, {
      childList: true,
      subtree: true,
      characterData: true
    });
  });

  const store = process.env.JUPYTER_DISTRIBUTED_STORE as string;
  const feeder = spawn(
    'python',
    [
      path.join(__dirname, 'feed_panel.py'),
      store,
      '--seconds',
      String(SECONDS),
      '--ranks',
      String(RANKS),
      '--lines-per-second',
      String(LINES)
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  );
  const lines = readline.createInterface({ input: feeder.stdout });
  const messages: Record<string, unknown>[] = [];
  lines.on('line', line => messages.push(JSON.parse(line) as Record<string, unknown>));

  // The new run is selected by itself; follow its logs.
  await expect(panel.getByLabel('Run state')).toHaveText('running', { timeout: 30_000 });
  await panel.getByRole('tab', { name: 'Logs' }).click();
  const streamFrom = await page.evaluate(() => performance.now());
  const cdp = process.env.BENCH_PROFILE ? await page.context().newCDPSession(page.context().pages()[0]!) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.start');
  }
  const exited = new Promise<number | null>(resolve => feeder.on('exit', resolve));
  // First half of the feed on the Logs tab, second half on the Throughput tab (256 traces).
  await page.waitForTimeout((SECONDS * 1000) / 2);
  await page.screenshot({ path: test.info().outputPath('bench-logs.png') });
  const switchAt = await page.evaluate(() => performance.now());
  await panel.getByRole('tab', { name: 'Throughput' }).click();
  await expect(panel.getByLabel('samples/s plot').locator('.main-svg').first()).toBeVisible();
  const exit = await exited;
  await page.screenshot({ path: test.info().outputPath('bench-throughput.png') });
  const streamTo = await page.evaluate(() => performance.now());
  if (cdp) {
    const { profile } = await cdp.send('Profiler.stop');
    const self = new Map<number, number>();
    profile.samples?.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0)));
    const byName = new Map<string, number>();
    for (const node of profile.nodes) {
      const f = node.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
      byName.set(key, (byName.get(key) ?? 0) + (self.get(node.id) ?? 0) / 1000);
    }
    const top = [...byName.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25);
    console.log(top.map(([k, ms]) => `${ms.toFixed(0).padStart(7)} ms  ${k}`).join('\n'));
  }
  expect(exit).toBe(0);
  await expect(panel.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });
  await panel.getByRole('tab', { name: 'Ranks' }).click();
  await page.screenshot({ path: test.info().outputPath('bench-ranks.png') });

  const result = await page.evaluate(() => {
    type Bench = { seen: Map<number, number>; longTasks: [number, number][] };
    const bench = (window as unknown as Record<string, Bench>).__bench as Bench;
    return { latencies: [...bench.seen.values()], longTasks: bench.longTasks };
  });
  const markers = Number(messages.find(m => 'markers' in m)?.markers ?? 0);
  const lat = result.latencies.sort((a, b) => a - b);
  // Long tasks while the log view followed the stream, and over the whole test (which also
  // counts the panel's start-up, the first snapshot and the Ranks tab's 256 tiles).
  const during = (from: number, to: number): number[] =>
    result.longTasks.filter(([start]) => start >= from && start <= to).map(([, d]) => d);
  const streaming = during(streamFrom, switchAt);
  const plotting = during(switchAt, streamTo);
  const all = result.longTasks.map(([, duration]) => duration);
  const summary = {
    ranks: RANKS,
    seconds: SECONDS,
    lines_per_second: LINES,
    markers_written: markers,
    markers_seen: lat.length,
    latency_s: {
      median: percentile(lat, 50),
      p95: percentile(lat, 95),
      max: lat[lat.length - 1] ?? NaN
    },
    long_tasks_throughput_tab: {
      count: plotting.length,
      total_ms: plotting.reduce((a, b) => a + b, 0),
      max_ms: Math.max(0, ...plotting)
    },
    long_tasks_logs_tab: {
      count: streaming.length,
      total_ms: streaming.reduce((a, b) => a + b, 0),
      max_ms: Math.max(0, ...streaming)
    },
    long_tasks_whole_test: {
      count: all.length,
      total_ms: all.reduce((a, b) => a + b, 0),
      max_ms: Math.max(0, ...all)
    }
  };
  const out = test.info().outputPath('bench_panel.json');
  fs.writeFileSync(out, JSON.stringify(summary, null, 2));
  console.log(`bench_panel: ${JSON.stringify(summary)}`);
});
