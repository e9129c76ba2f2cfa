/**
 * The panel's samples/s rule and straggler rule (`rates.ts`) against the golden fixture that
 * `python/jupyter_distributed/rates.py` is checked against too (tests/python/test_rates.py).
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { rankGroups, throughputSeries } from '../../labextension/src/derive';
import { RankReports, stragglers, totalRate } from '../../labextension/src/rates';
import { RunLive } from '../../labextension/src/runstate';
import type { DistributedEvent } from '../../labextension/src/wire';
import { makeRun } from './fakes';

interface IFixture {
  window_seconds: number;
  straggler_threshold: number;
  data_parallel_degree: number;
  reports: Record<string, [number, number][]>;
  expected: {
    first_to_last: Record<string, number | null>;
    live: Record<string, number | null>;
    live_per_second: Record<string, [number, number][]>;
    total_first_to_last: number;
    total_live: number;
    total_live_per_second: [number, number][];
    stragglers_first_to_last: number[];
    stragglers_live: number[];
  };
}

const FIXTURE = JSON.parse(readFileSync(join(__dirname, '..', 'rates', 'rates.json'), 'utf8')) as IFixture;
const { expected } = FIXTURE;

function close(got: number | null | undefined, want: number | null): boolean {
  return want === null
    ? got === null
    : got !== null && got !== undefined && Math.abs(got - want) <= 1e-9 * Math.abs(want);
}

function fed(): Map<number, RankReports> {
  const out = new Map<number, RankReports>();
  for (const [rank, reports] of Object.entries(FIXTURE.reports)) {
    const r = new RankReports(FIXTURE.window_seconds);
    for (const [t, n] of reports) {
      r.add(t, n);
    }
    out.set(Number(rank), r);
  }
  return out;
}

function known(values: Record<string, number | null>): Map<number, number> {
  return new Map(
    Object.entries(values)
      .filter((e): e is [string, number] => e[1] !== null)
      .map(([r, v]) => [Number(r), v])
  );
}

/** The fixture's reports as a run's events, with `data_parallel_degree` replicas. */
function fixtureRun(state: 'running' | 'completed'): RunLive {
  const live = new RunLive('r');
  const ranks = Object.keys(FIXTURE.reports).map(Number);
  live.setSnapshot({
    run: makeRun('r', 1000, { state }),
    ranks: ranks.map(rank => ({
      rank,
      host: 'a',
      pid: 1,
      state: 'running' as const,
      coords: { data_parallel: rank % FIXTURE.data_parallel_degree },
      updated: 1000,
      heartbeat: 1000
    }))
  });
  const events: DistributedEvent[] = Object.entries(FIXTURE.reports).flatMap(([rank, reports]) =>
    reports.map(([t, n]) => ({ kind: 'metric' as const, run_id: 'r', rank: Number(rank), t, values: { samples: n } }))
  );
  events.sort((a, b) => a.t - b.t);
  live.apply(events.map((event, i) => ({ seq: i + 1, event })));
  return live;
}

describe('the samples/s rule (tests/rates/rates.json)', () => {
  it('gives each rank its first-to-last and live rate, the totals and the stragglers', () => {
    const ranks = fed();
    for (const [rank, want] of Object.entries(expected.first_to_last)) {
      expect(close(ranks.get(Number(rank))?.firstToLast, want), `rank ${rank}`).toBe(true);
    }
    for (const [rank, want] of Object.entries(expected.live)) {
      expect(close(ranks.get(Number(rank))?.live, want), `rank ${rank}`).toBe(true);
    }
    const degree = FIXTURE.data_parallel_degree;
    expect(totalRate(known(expected.first_to_last).values(), degree)).toBeCloseTo(expected.total_first_to_last, 9);
    expect(totalRate(known(expected.live).values(), degree)).toBeCloseTo(expected.total_live, 9);
    const threshold = FIXTURE.straggler_threshold;
    expect([...stragglers(known(expected.first_to_last), threshold)]).toEqual(expected.stragglers_first_to_last);
    expect([...stragglers(known(expected.live), threshold)]).toEqual(expected.stragglers_live);
  });

  it("gives the plot's line per rank and per second, and its total", () => {
    const live = fixtureRun('running');
    const { perRank, total } = throughputSeries(live, 0);
    for (const [rank, want] of Object.entries(expected.live_per_second)) {
      const got = perRank.get(Number(rank)) ?? { x: [], y: [] };
      expect(got.x, `rank ${rank}`).toEqual(want.map(([s]) => s));
      expect(
        got.y.every((y, i) => close(y, want[i]?.[1] ?? NaN)),
        `rank ${rank}`
      ).toBe(true);
    }
    expect(total.x).toEqual(expected.total_live_per_second.map(([s]) => s));
    expect(total.y.every((y, i) => close(y, expected.total_live_per_second[i]?.[1] ?? NaN))).toBe(true);
  });

  it('shows the same figure on the tile and the last point of the plot; first to last once ended', () => {
    const tilesOf = (live: RunLive) => rankGroups(live, 1011, FIXTURE.straggler_threshold).flatMap(g => g.tiles);
    const running = fixtureRun('running');
    const { perRank } = throughputSeries(running, 0);
    for (const tile of tilesOf(running)) {
      const line = perRank.get(tile.rank);
      expect(close(tile.samplesPerSec, expected.live[tile.rank] ?? null)).toBe(true);
      if (line?.y.length) {
        expect(tile.samplesPerSec).toBe(line.y[line.y.length - 1]);
      }
    }
    expect(
      tilesOf(running)
        .filter(t => t.straggler)
        .map(t => t.rank)
    ).toEqual(expected.stragglers_live);
    const ended = tilesOf(fixtureRun('completed'));
    expect(ended.every(t => close(t.samplesPerSec, expected.first_to_last[t.rank] ?? null))).toBe(true);
    expect(ended.filter(t => t.straggler).map(t => t.rank)).toEqual(expected.stragglers_first_to_last);
  });

  it('gives the same lines when a report arrives late', () => {
    const inOrder = fed();
    const late = new RankReports(FIXTURE.window_seconds);
    const reports = FIXTURE.reports['1'] ?? [];
    for (const [t, n] of [...reports.slice(0, 2), ...reports.slice(3), reports[2] as [number, number]]) {
      late.add(t, n);
    }
    expect([...late.perSecond.entries()].sort(([a], [b]) => a - b)).toEqual(
      [...(inOrder.get(1)?.perSecond.entries() ?? [])].sort(([a], [b]) => a - b)
    );
    expect(late.live).toBeCloseTo(inOrder.get(1)?.live ?? NaN, 9);
  });
});
