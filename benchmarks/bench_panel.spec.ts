/**
 * Panel benchmark: a synthetic 256-rank run is written into the run store
 * (benchmarks/feed_panel.py) while the panel follows it in headless Chromium,
 * showing each tab in turn (Runs, Ranks, Logs, Throughput) for the same time
 * under the same load. Per tab it reports:
 *
 * - long tasks (PerformanceObserver 'longtask', > 50 ms): count and longest, and how many of
 *   them came in the first second after the tab was clicked (the switch itself); those after
 *   plotly.js was loaded and warmed up (the panel's `plotly-ready` mark: before it is the
 *   chunk's first load), each with the figure draws inside it (the panel's User Timing);
 * - main thread busy: milliseconds per second spent in the page's main-thread tasks (Chrome's
 *   TaskDuration counter; wall time, so it grows with the machine's load and the throttle);
 * - frame delay: a probe asks for an animation frame every 50 ms and times how long it waits
 *   (how late the screen can change; ~16 ms when the page is idle), p95;
 * - on the Logs tab, event-to-screen latency: a marker line's time as written by the feeder to
 *   the frame in which it is on screen, p95.
 *
 * Run: make bench-panel. Environment: BENCH_LINES_PER_SECOND (10000), BENCH_RANKS (256),
 * BENCH_HOSTS (8: the ranks are spread over that many hosts, e.g. 125 for 1,000 ranks of 8 a node),
 * BENCH_SECONDS_PER_TAB (8), BENCH_TABS (Runs,Ranks,Logs,Throughput), BENCH_CPU_THROTTLE
 * (1: none; 4 makes Chromium's main thread 4x slower, as DevTools does), BENCH_PROFILE=1
 * (the top functions by own time, per tab), BENCH_HISTORY_SECONDS=600 (the run has been going
 * on for that long: its past metrics are replayed first, as when the panel opens on a long run),
 * BENCH_PROBE=1 (the run has a probe of every pair of its ranks: the Scaling tab draws its
 * heatmap; add Scaling to BENCH_TABS), BENCH_TRACE=1 (what the long tasks did: script,
 * style, layout, paint, GC..., from a Chrome trace, per tab; each task's wall and CPU time, and
 * the tasks after plotly.js is ready with the figure draws inside them; BENCH_TRACE_DIR=<dir> also
 * writes each tab's trace there, trace-<tab>.json, with V8's JS samples when BENCH_TRACE_SAMPLES=1). Writes ui-tests/test-results/<test>/bench_panel.json
 * and prints a table.
 */

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { expect, test } from '@jupyterlab/galata';
import type { Page } from '@playwright/test';

import { type ITraceEvent, longTaskBreakdown, TRACE_CATEGORIES, tasksAfter } from './trace_tasks';

const LINES = Number(process.env.BENCH_LINES_PER_SECOND ?? '10000');
const RANKS = Number(process.env.BENCH_RANKS ?? '256');
const HOSTS = Number(process.env.BENCH_HOSTS ?? '8');
const PER_TAB = Number(process.env.BENCH_SECONDS_PER_TAB ?? '8');
const HISTORY = Number(process.env.BENCH_HISTORY_SECONDS ?? '0');
const TABS = (process.env.BENCH_TABS ?? 'Runs,Ranks,Logs,Throughput').split(',').map(t => t.trim());
const THROTTLE = Number(process.env.BENCH_CPU_THROTTLE ?? '1');
const PROFILE = Boolean(process.env.BENCH_PROFILE);
const TRACE = Boolean(process.env.BENCH_TRACE);
const PROBE = Boolean(process.env.BENCH_PROBE);
/** Long tasks starting this soon after a tab's click are counted as the switch's. */
const SWITCH_MS = 1000;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (!sorted.length) {
    return NaN;
  }
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface IPhase {
  tab: string;
  from: number;
  to: number;
  /** When the tab's click reached the page (null: not seen). */
  clicked: number | null;
  /** Seconds of main-thread tasks, script, style and layout in the phase (Chrome's own counters). */
  busy: Record<string, number>;
  profile: string[];
  trace: string[];
  /** Each figure's draws: "plot passes/points moved without one". */
  draws: string[];
}

type ProfileNode = { id: number; callFrame: { functionName: string; url: string; lineNumber: number } };

function topFunctions(profile: { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] }): string[] {
  const self = new Map<number, number>();
  profile.samples?.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0));
  });
  const byName = new Map<string, number>();
  for (const node of profile.nodes) {
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
    byName.set(key, (byName.get(key) ?? 0) + (self.get(node.id) ?? 0) / 1000);
  }
  return [...byName.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([k, ms]) => `${ms.toFixed(0).padStart(7)} ms  ${k}`);
}

test('256-rank run: long tasks, frame delay and latency on every tab', async ({ page }) => {
  test.setTimeout((TABS.length * PER_TAB + 180) * 1000);
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const panel = page.locator('#jupyter-distributed\\:panel');
  await expect(panel).toBeVisible();

  // Observers in the page: long tasks, the frame-delay probe, marker lines as they appear.
  await page.evaluate(() => {
    const w = window as unknown as Record<string, unknown>;
    const seen = new Map<number, [number, number]>(); // marker -> [performance.now(), latency s]
    const longTasks: [number, number][] = []; // [startTime, duration] in ms
    const frames: [number, number][] = []; // [asked at, waited ms]
    w.__bench = { seen, longTasks, frames };
    new PerformanceObserver(list => {
      for (const entry of list.getEntries()) {
        longTasks.push([entry.startTime, entry.duration]);
      }
    }).observe({ type: 'longtask', buffered: false });
    // The panel's User Timing: plotly.js loaded and warmed up (a mark), each figure's draws
    // (measures: frame, draw, move): which long tasks are the chunk's load, which a figure's.
    const timings: [string, number, number][] = []; // [name, startTime, duration]
    w.__timings = timings;
    for (const type of ['mark', 'measure']) {
      new PerformanceObserver(list => {
        for (const entry of list.getEntries()) {
          if (entry.name.startsWith('jupyter-distributed:')) {
            timings.push([entry.name.slice('jupyter-distributed:'.length), entry.startTime, entry.duration]);
          }
        }
      }).observe({ type, buffered: true });
    }
    // When a tab's click reached the page (Playwright's click itself takes tens to hundreds of
    // ms before it: its checks of the element).
    document.addEventListener(
      'click',
      event => {
        if ((event.target as Element | null)?.closest?.('[role="tab"]')) {
          w.__clicked = performance.now();
        }
      },
      true
    );
    const probe = (): void => {
      const asked = performance.now();
      requestAnimationFrame(() => {
        frames.push([asked, performance.now() - asked]);
        setTimeout(probe, 50);
      });
    };
    probe();
    // While the Logs tab is shown: its rows are looked at once per frame after they changed
    // (only the rows in the DOM; the observer watches only the log list).
    let pending = false;
    let list: Element | null = null;
    const scan = (): void => {
      pending = false;
      const now = Date.now() / 1000;
      for (const row of list?.querySelectorAll('.jp-Distributed-line') ?? []) {
        const m = /BENCH-MARK (\d+) ([\d.]+)/.exec(row.textContent ?? '');
        if (m && !seen.has(Number(m[1]))) {
          seen.set(Number(m[1]), [performance.now(), now - Number(m[2])]);
        }
      }
    };
    const observer = new MutationObserver(() => {
      if (!pending) {
        pending = true;
        requestAnimationFrame(scan);
      }
    });
    w.__watchLogs = (on: boolean): void => {
      observer.disconnect();
      list = on ? document.querySelector('.jp-Distributed-logScroller') : null;
      if (list) {
        observer.observe(list, { childList: true, subtree: true, characterData: true });
      }
    };
  });

  // Galata's `page` is a proxy: the CDP session needs the context's own page.
  const cdp = await page.context().newCDPSession(page.context().pages()[0] as Page);
  const store = process.env.JUPYTER_DISTRIBUTED_STORE as string;
  const stopFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-panel-')), 'stop');
  const feeder = spawn(
    'python',
    [
      path.join(__dirname, 'feed_panel.py'),
      store,
      '--seconds',
      String(TABS.length * PER_TAB + 120),
      '--stop-file',
      stopFile,
      '--ranks',
      String(RANKS),
      '--hosts',
      String(HOSTS),
      '--lines-per-second',
      String(LINES),
      '--history-seconds',
      String(HISTORY),
      ...(PROBE ? ['--probe'] : [])
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  );
  const messages: Record<string, unknown>[] = [];
  readline
    .createInterface({ input: feeder.stdout })
    .on('line', line => messages.push(JSON.parse(line) as Record<string, unknown>));
  const exited = new Promise<number | null>(resolve => feeder.on('exit', resolve));

  // The run: selected by itself when it started after the panel opened; one with a history is
  // older, so it is clicked. Then its history is replayed through the stream, then each tab.
  await expect.poll(() => messages.length, { timeout: 120_000 }).toBeGreaterThan(0);
  const { run, history_lines: historyLines } = messages[0] as { run: string; history_lines: number };
  await panel.getByRole('option', { name: `Run ${run}` }).click();
  await expect(panel.getByLabel('Run state')).toHaveText('running', { timeout: 30_000 });
  await expect
    .poll(
      () =>
        page.evaluate(async () => {
          type Galata = { getPlugin(id: string): Promise<{ live: { logs: { size: number } } | null }> };
          const model = await (window as unknown as { galata: Galata }).galata.getPlugin('jupyter-distributed:plugin');
          return model.live?.logs.size ?? 0;
        }),
      { timeout: 300_000 }
    )
    .toBeGreaterThanOrEqual(historyLines);
  if (THROTTLE > 1) {
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: THROTTLE });
  }
  await cdp.send('Performance.enable');
  const mainThreadTimes = async (): Promise<Record<string, number>> => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    const wanted = ['TaskDuration', 'ScriptDuration', 'RecalcStyleDuration', 'LayoutDuration'];
    return Object.fromEntries(metrics.filter(m => wanted.includes(m.name)).map(m => [m.name, m.value]));
  };
  const phases: IPhase[] = [];
  for (const tab of TABS) {
    if (PROFILE) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.start');
    }
    const traced: ITraceEvent[] = [];
    const collect = (data: { value: object[] }): void => {
      traced.push(...(data.value as ITraceEvent[]));
    };
    if (TRACE) {
      cdp.on('Tracing.dataCollected', collect);
      // BENCH_TRACE_SAMPLES=1: V8's JS samples in the trace too (which function a task ran).
      const categories = process.env.BENCH_TRACE_SAMPLES
        ? `${TRACE_CATEGORIES},disabled-by-default-v8.cpu_profiler`
        : TRACE_CATEGORIES;
      await cdp.send('Tracing.start', { categories, transferMode: 'ReportEvents' });
    }
    const before = await mainThreadTimes();
    const from = await page.evaluate(() => performance.now());
    await panel.getByRole('tab', { name: tab }).click();
    const clicked = await page.evaluate(() => (window as unknown as { __clicked?: number }).__clicked ?? null);
    if (tab === 'Logs') {
      await expect(panel.getByRole('list', { name: 'Log lines' })).toBeVisible();
    }
    await page.evaluate(
      on => (window as unknown as { __watchLogs(on: boolean): void }).__watchLogs(on),
      tab === 'Logs'
    );
    await page.waitForTimeout(PER_TAB * 1000);
    const to = await page.evaluate(() => {
      (window as unknown as { __watchLogs(on: boolean): void }).__watchLogs(false);
      return performance.now();
    });
    // Each figure's draws so far: full plot passes (react) / points moved without one (animate).
    const draws = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>('.jp-Distributed-figure')].map(
        n => `${n.dataset.reacts ?? 0}/${n.dataset.moves ?? 0}`
      )
    );
    const after = await mainThreadTimes();
    const busy = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
    const profile = PROFILE ? topFunctions((await cdp.send('Profiler.stop')).profile) : [];
    let trace: string[] = [];
    if (TRACE) {
      const complete = new Promise(resolve => cdp.once('Tracing.tracingComplete', resolve));
      await cdp.send('Tracing.end');
      await complete;
      cdp.off('Tracing.dataCollected', collect);
      if (process.env.BENCH_TRACE_DIR) {
        // The tab's whole trace, for a closer look (chrome://tracing or Perfetto load it).
        fs.mkdirSync(process.env.BENCH_TRACE_DIR, { recursive: true });
        fs.writeFileSync(
          path.join(process.env.BENCH_TRACE_DIR, `trace-${tab.toLowerCase()}.json`),
          JSON.stringify({ traceEvents: traced })
        );
      }
      const { tasks, work, durations } = longTaskBreakdown(traced);
      const cpuLong = durations.filter(([, cpu]) => cpu > 50).length;
      // By CPU time too: on a loaded machine a task's wall time is mostly other processes' turns.
      const late = tasksAfter(traced, 'plotly-ready', 'jupyter-distributed:', 30);
      const cpuLate = late.tasks.filter(t => t.cpu > 50);
      trace = [
        `${tasks} tasks > 50 ms, ${cpuLong} of them with > 50 ms of CPU time; wall/CPU ms: ` +
          durations.map(([wall, cpu]) => `${wall.toFixed(0)}/${cpu.toFixed(0)}`).join(', '),
        `after plotly.js is ready${late.ready ? '' : ' (not in this trace: every task)'}: ` +
          `${late.tasks.length} tasks over 30 ms of wall or CPU time, ${cpuLate.length} over 50 ms of CPU time ` +
          `(wall/CPU ms (draws)): ` +
          (late.tasks
            .map(t => `${t.wall.toFixed(0)}/${t.cpu.toFixed(0)} (${t.names.join('; ') || 'no draw'})`)
            .join(', ') || 'none'),
        ...work.slice(0, 15).map(([k, ms]) => `${ms.toFixed(0).padStart(7)} ms  ${k}`)
      ];
    }
    phases.push({ tab, from, to, clicked, busy, profile, trace, draws });
    await page.screenshot({ path: test.info().outputPath(`bench-${tab.toLowerCase()}.png`) });
  }
  if (THROTTLE > 1) {
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  }
  fs.writeFileSync(stopFile, '');
  const feederExit = await exited;
  fs.rmSync(path.dirname(stopFile), { recursive: true, force: true }); // (each run left one in /tmp)
  expect(feederExit).toBe(0);
  await expect(panel.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });

  const result = await page.evaluate(() => {
    type Bench = { seen: Map<number, [number, number]>; longTasks: [number, number][]; frames: [number, number][] };
    const bench = (window as unknown as Record<string, Bench>).__bench as Bench;
    const timings = (window as unknown as { __timings: [string, number, number][] }).__timings;
    return { seen: [...bench.seen.values()], longTasks: bench.longTasks, frames: bench.frames, timings };
  });
  const done = messages.find(m => 'done' in m) ?? {};
  const rows = phases.map(({ tab, from, to, clicked, busy, profile, trace, draws }) => {
    const tasks = result.longTasks.filter(([start]) => start >= from && start <= to);
    const atSwitch = tasks.filter(([start]) => start < from + SWITCH_MS);
    const frames = result.frames.filter(([asked]) => asked >= from && asked <= to).map(([, ms]) => ms);
    const latency = result.seen.filter(([at]) => at >= from && at <= to).map(([, s]) => s * 1000);
    // plotly.js loaded and warmed up (the first time only): the long tasks before it are the
    // chunk's load (exempt from the goal); each later one named by the figure draws inside it.
    const ready = result.timings.find(([name]) => name === 'plotly-ready')?.[1] ?? null;
    const readyHere = ready !== null && ready >= from && ready <= to ? ready : null;
    const inside = (start: number, d: number): string =>
      result.timings
        .filter(([name, t, dt]) => name !== 'plotly-ready' && t >= start && t + dt <= start + d + 1)
        .map(([name, , dt]) => `${name} ${Math.round(dt)}`)
        .join('; ') || 'no draw';
    // Each figure first drawn on this tab: when its first draw ended (the end of its second
    // task when it was drawn in two), in ms after the click reached the page.
    const origin = clicked ?? from;
    const inTab = result.timings.filter(([, t]) => t >= from && t <= to);
    const firstDrawn: Record<string, number> = {};
    for (const [name, t, dt] of inTab) {
      const title = name.startsWith('draw ') && !name.startsWith('draw 2 ') ? name.slice(5) : null;
      if (title !== null && !(title in firstDrawn)) {
        const rest = inTab.find(([n, t2]) => n === `draw 2 ${title}` && t2 >= t);
        firstDrawn[title] = Math.round((rest ? rest[1] + rest[2] : t + dt) - origin);
      }
    }
    return {
      tab,
      seconds: (to - from) / 1000,
      click_ms: clicked === null ? null : Math.round(clicked - from),
      figures_drawn_ms: firstDrawn,
      long_tasks: tasks.length,
      long_task_ms: tasks.map(([start, d]) => [Math.round(start - from), Math.round(d)]),
      long_task_max_ms: Math.max(0, ...tasks.map(([, d]) => d)),
      long_task_total_ms: tasks.reduce((a, [, d]) => a + d, 0),
      long_tasks_at_switch: atSwitch.length,
      plotly_ready_ms: readyHere === null ? null : Math.round(readyHere - from),
      long_tasks_after_plotly_ready: tasks
        .filter(([start]) => readyHere === null || start >= readyHere)
        .map(([start, d]) => `${Math.round(start - from)}:${Math.round(d)} (${inside(start, d)})`),
      long_task_max_at_switch_ms: Math.max(0, ...atSwitch.map(([, d]) => d)),
      busy_ms_per_s: ((busy.TaskDuration ?? 0) * 1000) / ((to - from) / 1000),
      script_ms_per_s: ((busy.ScriptDuration ?? 0) * 1000) / ((to - from) / 1000),
      style_layout_ms_per_s:
        (((busy.RecalcStyleDuration ?? 0) + (busy.LayoutDuration ?? 0)) * 1000) / ((to - from) / 1000),
      frame_delay_p95_ms: percentile(frames, 95),
      frame_delay_max_ms: Math.max(0, ...frames),
      event_to_screen_p95_ms: latency.length ? percentile(latency, 95) : null,
      event_to_screen_median_ms: latency.length ? percentile(latency, 50) : null,
      figure_draws: draws,
      profile,
      trace
    };
  });
  const summary = {
    ranks: RANKS,
    lines_per_second_asked: LINES,
    lines_per_second_written: Number(done.lines ?? 0) / Number(done.seconds ?? 1),
    cpu_throttle: THROTTLE,
    seconds_per_tab: PER_TAB,
    history_seconds: HISTORY,
    load_average: os.loadavg(),
    cores: os.cpus().length,
    tabs: rows
  };
  fs.writeFileSync(test.info().outputPath('bench_panel.json'), JSON.stringify(summary, null, 2));

  const ms = (v: number | null): string => (v === null || Number.isNaN(v) ? '–' : v.toFixed(0));
  const table = [
    `bench_panel: ${RANKS} ranks, ${LINES} lines/s asked, ${summary.lines_per_second_written.toFixed(0)} written, ` +
      `CPU throttle ${THROTTLE}x, ${PER_TAB} s per tab, ${HISTORY} s of history, load ${summary.load_average.map(l => l.toFixed(1)).join(' ')}`,
    '',
    '| tab | long tasks > 50 ms | max task (ms) | of which at the switch (max ms) | main thread busy (ms/s) | p95 frame delay (ms) | p95 event → screen (ms) |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      r =>
        `| ${r.tab} | ${r.long_tasks} | ${ms(r.long_task_max_ms)} | ${r.long_tasks_at_switch} (${ms(r.long_task_max_at_switch_ms)}) ` +
        `| ${ms(r.busy_ms_per_s)} | ${ms(r.frame_delay_p95_ms)} | ${ms(r.event_to_screen_p95_ms)} |`
    )
  ];
  console.log(table.join('\n'));
  for (const r of rows) {
    const load = r.plotly_ready_ms === null ? '' : `plotly.js loaded and warmed up ${r.plotly_ready_ms} ms after the click; `;
    console.log(`\n${r.tab}: ${load}long tasks after that: ${r.long_tasks_after_plotly_ready.join(', ') || 'none'}`);
    const drawnText = Object.entries(r.figures_drawn_ms)
      .map(([title, ms]) => `${title} ${ms} ms`)
      .join(', ');
    if (drawnText) {
      console.log(
        `${r.tab}: figures first drawn (ms after the click reached the page, ${r.click_ms ?? '?'} ms after it was asked): ${drawnText}`
      );
    }
  }
  for (const r of rows.filter(r => r.profile.length)) {
    console.log(`\nTop functions by own time, ${r.tab} tab:\n${r.profile.join('\n')}`);
  }
  for (const r of rows.filter(r => r.trace.length)) {
    console.log(`\nInside the long tasks (own time), ${r.tab} tab: ${r.trace.join('\n')}`);
  }
});
