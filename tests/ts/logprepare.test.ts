import { describe, expect, it } from 'vitest';

import { ALL_LINES, LogBuffer } from '../../labextension/src/logbuffer';
import { LogCollapse, ranksText } from '../../labextension/src/logcollapse';
import { LogViewState } from '../../labextension/src/logstate';
import { type ISliceHost, SLICE_MS, Slices } from '../../labextension/src/slices';
import type { LogLine } from '../../labextension/src/wire';

/** A fake clock and timer: `run` calls what is due, in order, one at a time. */
class FakeHost implements ISliceHost {
  time = 0;
  /** How far the clock moves each time it is read (work takes time). */
  step = 0;
  queue: (() => void)[] = [];
  tasks = 0;
  now(): number {
    this.time += this.step;
    return this.time;
  }
  later(fn: () => void): () => void {
    this.queue.push(fn);
    return () => {
      this.queue = this.queue.filter(f => f !== fn);
    };
  }
  run(): void {
    while (this.queue.length) {
      this.tasks++;
      (this.queue.shift() as () => void)();
    }
  }
}

/** Lines as a training loop writes them: most the same on every rank within a few ms, some not. */
function lines(n: number, ranks = 8): LogLine[] {
  const out: LogLine[] = [];
  for (let i = 0; i < n; i++) {
    const step = Math.floor(i / ranks);
    out.push({
      seq: i,
      rank: i % ranks,
      t: 100 + step * 0.05 + (i % ranks) * 0.001,
      stream: step % 5 === 0 ? 'stderr' : 'stdout',
      text: step % 3 === 0 ? `rank-local ${i}` : `step ${step}`
    });
  }
  return out;
}

function text(rows: readonly { rank: number; text: string; ranks?: readonly number[] }[]): string[] {
  return rows.map(r => `${r.ranks ? `[ranks ${ranksText(r.ranks)}]` : `[rank ${r.rank}]`} ${r.text}`);
}

describe('work in slices', () => {
  it('works in tasks of at most a slice each until the work is over', () => {
    const host = new FakeHost();
    let left = 30; // 30 units of 1 ms
    const slices: number[] = [];
    const work = new Slices(done => {
      let units = 0;
      while (left > 0 && !done()) {
        host.time += 1;
        left--;
        units++;
      }
      slices.push(units);
      return left === 0;
    }, host);
    work.request();
    work.request(); // one slice is due already
    expect(host.queue.length).toBe(1);
    host.run();
    expect(left).toBe(0);
    expect(slices.every(units => units <= SLICE_MS)).toBe(true);
    expect(slices.length).toBe(Math.ceil(30 / SLICE_MS));
  });

  it('does nothing once stopped', () => {
    const host = new FakeHost();
    let calls = 0;
    const work = new Slices(() => {
      calls++;
      return true;
    }, host);
    work.request();
    work.stop();
    work.request();
    host.run();
    expect(calls).toBe(0);
  });
});

describe('the Logs tab’s rows, prepared before the tab is shown', () => {
  it('reads lines in parts with the same rows as at once', () => {
    const all = lines(5000);
    const once = new LogCollapse().rows(all);
    const parts = new LogCollapse();
    let calls = 0;
    do {
      parts.rows(all, () => true); // stops at every look
      calls++;
    } while (!parts.caughtUp);
    expect(calls).toBeGreaterThan(5);
    expect(text(parts.rows(all))).toEqual(text(once));
    expect(text(once)).toContain('[ranks 0-7] step 1');
  });

  it('filters in parts, counting the lines not read yet', () => {
    const buffer = new LogBuffer();
    for (const line of lines(5000)) {
      buffer.push(line);
    }
    const stderr = { ...ALL_LINES, stderrOnly: true };
    expect(buffer.unread).toBe(5000);
    const first = buffer.filtered(stderr, () => true).length;
    expect(buffer.unread).toBeGreaterThan(0);
    expect(first).toBeLessThan(5000 / 5);
    while (buffer.unread > 0) {
      buffer.filtered(stderr, () => true);
    }
    expect(buffer.filtered(stderr)).toEqual(lines(5000).filter(l => l.stream === 'stderr'));
  });

  it('keeps up with the lines in slices whichever tab is shown, so showing them reads none', () => {
    const host = new FakeHost();
    host.step = 0.5; // each look at the clock: half a ms of work
    const state = new LogViewState(() => undefined, host);
    const buffer = new LogBuffer();
    const all = lines(40_000);
    for (const line of all.slice(0, 20_000)) {
      buffer.push(line);
    }
    state.keepUp(buffer);
    host.run();
    const afterFirst = host.tasks;
    expect(afterFirst).toBeGreaterThan(3); // in several tasks, not one
    for (const line of all.slice(20_000)) {
      buffer.push(line);
    }
    state.keepUp(buffer);
    host.run();
    // Nothing left to read when the tab is shown.
    expect(buffer.unread).toBe(0);
    expect(state.prepare(buffer, () => true)).toBe(true);
    const expected = new LogViewState(() => undefined).shown(all);
    expect(text(state.shown(buffer.filtered(state.filter)))).toEqual(text(expected));
  });

  it('prepares the expanded rows too, and forgets the buffer of another run', () => {
    const host = new FakeHost();
    const state = new LogViewState(() => undefined, host);
    state.setCollapsed(false);
    const buffer = new LogBuffer();
    for (const line of lines(3000)) {
      buffer.push(line);
    }
    state.keepUp(buffer);
    host.run();
    expect(buffer.unread).toBe(0);
    const other = new LogBuffer();
    other.push(lines(1)[0] as LogLine);
    state.keepUp(other);
    state.reset(); // another run selected before the slice
    host.run();
    expect(other.unread).toBe(1);
  });
});

describe('a filter change on many lines', () => {
  const search = { ...ALL_LINES, search: 'rank-local' };
  const matches = (all: LogLine[]): LogLine[] => all.filter(l => l.text.includes('rank-local'));

  it('reads a new filter from the newest line back, so that its newest matches come first', () => {
    const all = lines(20_000);
    const buffer = new LogBuffer();
    for (const line of all) {
      buffer.push(line);
    }
    buffer.filtered(ALL_LINES); // every line read with the old filter
    const first = buffer.filtered(search, () => true); // one look: a part only
    expect(buffer.unread).toBeGreaterThan(0);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(matches(all).length);
    expect(first).toEqual(matches(all).slice(-first.length)); // the newest, oldest first
    buffer.push({ seq: 20_000, rank: 0, t: 1e4, stream: 'stdout', text: 'rank-local new' });
    while (buffer.unread > 0) {
      buffer.filtered(search, () => true);
    }
    expect(buffer.filtered(search).map(l => l.seq)).toEqual([...matches(all).map(l => l.seq), 20_000]);
  });

  it('applies a filter in slices, showing its newest matches at once and every one in the end', () => {
    const host = new FakeHost();
    let progressed = 0;
    const state = new LogViewState(
      () => undefined,
      host,
      () => progressed++
    );
    const buffer = new LogBuffer();
    const all = lines(60_000);
    for (const line of all) {
      buffer.push(line);
    }
    state.keepUp(buffer);
    host.run();
    host.step = 0.5; // each look at the clock: half a ms of work
    host.tasks = 0;
    state.setFilter({ search: 'rank-local' });
    const shown = state.rows(buffer); // the panel's render: at most a slice's reading
    expect(buffer.unread).toBeGreaterThan(0);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.at(-1)).toBe(matches(all).at(-1));
    const read: number[] = [];
    let before = buffer.unread;
    while (host.queue.length) {
      host.tasks++;
      (host.queue.shift() as () => void)();
      read.push(before - buffer.unread);
      before = buffer.unread;
    }
    expect(host.tasks).toBeGreaterThan(2); // in several tasks, not one
    // A slice reads what fits in its time: a look at the clock every 1,024 lines.
    expect(Math.max(...read)).toBeLessThanOrEqual(1024 * (SLICE_MS / host.step + 1));
    expect(progressed).toBeGreaterThan(0);
    expect(text(state.rows(buffer))).toEqual(text(new LogViewState(() => undefined).shown(matches(all))));
  });
});

describe('a filter read in parts while lines come and the oldest are dropped', () => {
  it('ends with the same lines as the filter read at once', () => {
    const all = lines(30_000);
    const buffer = new LogBuffer(5000); // drops the oldest beyond 5,000 lines
    const search = { ...ALL_LINES, search: 'rank-local' };
    let next = 0;
    const push = (n: number): void => {
      for (const line of all.slice(next, next + n)) {
        buffer.push(line);
      }
      next += n;
    };
    push(8000);
    buffer.filtered(ALL_LINES);
    let looks = 0;
    const twoLooks = (): boolean => ++looks % 2 === 0; // a slice: new lines, then older ones
    while (next < all.length) {
      buffer.read(search, twoLooks);
      if (looks % 3 === 0) {
        buffer.settle(twoLooks);
      }
      if (looks % 2 === 0) {
        buffer.newestRead(search, 100); // a render while reading
      }
      push(700);
    }
    while (buffer.unread > 0 || buffer.pending) {
      buffer.read(search, () => true);
      buffer.settle(() => true);
    }
    const held = all.slice(all.length - 5000);
    expect(buffer.filtered(search)).toEqual(held.filter(l => l.text.includes('rank-local')));
  });
});
