/**
 * What the page's long tasks did, from a Chrome trace (CDP `Tracing`, the
 * DevTools timeline categories): for every task of the renderer's main thread
 * longer than a threshold, the own time of each kind of work inside it
 * (script, style, layout, paint, GC, ...), summed over those tasks, and each task's wall and
 * CPU time (on a loaded machine a task's wall time is mostly the other processes' turns).
 * Used by bench_panel.spec.ts with BENCH_TRACE=1.
 */

export const TRACE_CATEGORIES = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'v8.execute',
  'blink.user_timing'
].join(',');

export interface ITraceEvent {
  name: string;
  ph: string;
  ts: number; // µs
  dur?: number; // µs
  /** The thread's CPU time in the event, µs: what the machine's other work does not lengthen. */
  tdur?: number;
  pid: number;
  tid: number;
  args?: { name?: string; data?: { functionName?: string; url?: string } };
}

/** The main thread of the page's renderer: the thread named CrRendererMain with the most events. */
function mainThread(events: readonly ITraceEvent[]): [number, number] | null {
  const named = events.filter(e => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
  let best: [number, number] | null = null;
  let bestCount = -1;
  for (const t of named) {
    const count = events.filter(e => e.pid === t.pid && e.tid === t.tid).length;
    if (count > bestCount) {
      best = [t.pid, t.tid];
      bestCount = count;
    }
  }
  return best;
}

/** Per kind of work, own ms inside the main thread's tasks longer than `thresholdMs`, largest first. */
export function longTaskBreakdown(
  events: readonly ITraceEvent[],
  thresholdMs = 50
): { tasks: number; work: [string, number][]; durations: [number, number][] } {
  const main = mainThread(events);
  if (!main) {
    return { tasks: 0, work: [], durations: [] };
  }
  const ours = events
    .filter(e => e.pid === main[0] && e.tid === main[1] && e.ph === 'X' && e.dur !== undefined)
    .sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const own = new Map<string, number>();
  let tasks = 0;
  const durations: [number, number][] = [];
  let task: ITraceEvent | null = null;
  // The open events inside the current long task, outermost first, with their children's time.
  let stack: { e: ITraceEvent; children: number }[] = [];
  const close = (upTo: number): void => {
    while (
      stack.length &&
      (stack[stack.length - 1] as { e: ITraceEvent }).e.ts + (stack[stack.length - 1]?.e.dur ?? 0) <= upTo
    ) {
      const { e, children } = stack.pop() as { e: ITraceEvent; children: number };
      const key = label(e);
      own.set(key, (own.get(key) ?? 0) + ((e.dur ?? 0) - children) / 1000);
      const parent = stack[stack.length - 1];
      if (parent) {
        parent.children += e.dur ?? 0;
      }
    }
  };
  for (const e of ours) {
    if (task && e.ts >= task.ts + (task.dur ?? 0)) {
      close(Infinity);
      task = null;
    }
    if (!task) {
      if (e.name === 'RunTask' && (e.dur ?? 0) / 1000 > thresholdMs) {
        task = e;
        tasks++;
        durations.push([(e.dur ?? 0) / 1000, (e.tdur ?? Number.NaN) / 1000]);
        stack = [];
      } else {
        continue;
      }
    }
    close(e.ts);
    stack.push({ e, children: 0 });
  }
  close(Infinity);
  return { tasks, work: [...own.entries()].sort((a, b) => b[1] - a[1]), durations };
}

function label(e: ITraceEvent): string {
  const fn = e.args?.data?.functionName;
  const url = e.args?.data?.url?.split('/').pop()?.split('?')[0];
  return fn || (e.name === 'FunctionCall' && url) ? `${e.name} ${fn || ''} ${url ?? ''}`.trim() : e.name;
}

/** A main-thread task: when (µs, the trace's clock), its wall and CPU ms, the panel's User Timing inside. */
export interface ITask {
  ts: number;
  wall: number;
  cpu: number;
  names: string[];
}

/**
 * The main thread's tasks after the User Timing mark `after` (all of them when it is not in the
 * trace) whose wall or CPU time is over `thresholdMs`, each with the names of the User Timing
 * entries (the panel's figure draws) that began inside it, `prefix` cut off.
 */
export function tasksAfter(
  events: readonly ITraceEvent[],
  after: string,
  prefix: string,
  thresholdMs = 50
): { ready: boolean; tasks: ITask[] } {
  const main = mainThread(events);
  if (!main) {
    return { ready: false, tasks: [] };
  }
  const timings = events.filter(e => e.name.startsWith(prefix) && e.ph !== 'e' && e.ph !== 'E');
  const mark = timings.find(e => e.name === prefix + after);
  const from = mark?.ts ?? -Infinity;
  const tasks = events
    .filter(
      e =>
        e.pid === main[0] &&
        e.tid === main[1] &&
        e.name === 'RunTask' &&
        e.ph === 'X' &&
        e.ts >= from &&
        Math.max(e.dur ?? 0, e.tdur ?? 0) / 1000 > thresholdMs
    )
    .sort((a, b) => a.ts - b.ts)
    .map(e => ({
      ts: e.ts,
      wall: (e.dur ?? 0) / 1000,
      cpu: (e.tdur ?? Number.NaN) / 1000,
      names: timings
        .filter(t => t.ts >= e.ts && t.ts <= e.ts + (e.dur ?? 0) && t !== mark)
        .map(t => t.name.slice(prefix.length))
    }));
  return { ready: mark !== undefined, tasks };
}
