/**
 * What the page's long tasks did, from a Chrome trace (CDP `Tracing`, the
 * DevTools timeline categories): for every task of the renderer's main thread
 * longer than a threshold, the own time of each kind of work inside it
 * (script, style, layout, paint, GC, ...), summed over those tasks.
 * Used by bench_panel.spec.ts with BENCH_TRACE=1.
 */

export const TRACE_CATEGORIES = ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute'].join(',');

export interface ITraceEvent {
  name: string;
  ph: string;
  ts: number; // µs
  dur?: number; // µs
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
): { tasks: number; work: [string, number][] } {
  const main = mainThread(events);
  if (!main) {
    return { tasks: 0, work: [] };
  }
  const ours = events
    .filter(e => e.pid === main[0] && e.tid === main[1] && e.ph === 'X' && e.dur !== undefined)
    .sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const own = new Map<string, number>();
  let tasks = 0;
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
        stack = [];
      } else {
        continue;
      }
    }
    close(e.ts);
    stack.push({ e, children: 0 });
  }
  close(Infinity);
  return { tasks, work: [...own.entries()].sort((a, b) => b[1] - a[1]) };
}

function label(e: ITraceEvent): string {
  const fn = e.args?.data?.functionName;
  const url = e.args?.data?.url?.split('/').pop()?.split('?')[0];
  return fn || (e.name === 'FunctionCall' && url) ? `${e.name} ${fn || ''} ${url ?? ''}`.trim() : e.name;
}
