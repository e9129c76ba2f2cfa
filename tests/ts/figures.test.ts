import { describe, expect, it } from 'vitest';

import {
  figureCsv,
  fileName,
  heightWithLegend,
  LEGEND_ROW,
  lineLayout,
  NEUTRAL,
  scatterData,
  smooth,
  uidOf,
  withAlpha
} from '../../labextension/src/figures';
import { heatmapData, matrixCsv } from '../../labextension/src/heatmapdata';
import { BAND_RANKS, parseRanks, rankTraces } from '../../labextension/src/manyranks';
import { rankColor } from '../../labextension/src/palette';
import { metricUnit, samplesTraces } from '../../labextension/src/plotdata';
import { RedrawGate, XLink } from '../../labextension/src/redraw';
import { RunLive, type Series } from '../../labextension/src/runstate';
import type { DistributedEvent } from '../../labextension/src/wire';

const T = 2_000_000;
const THEME = { font: '#222222', grid: '#dddddd', background: '#ffffff' };

/** `ranks` ranks reporting 32 samples every 0.25 s for 8 s; `slow` ranks report every 0.5 s. */
function liveOf(ranks: number, slow: readonly number[] = []): RunLive {
  const live = new RunLive('r');
  const events: DistributedEvent[] = [];
  for (let rank = 0; rank < ranks; rank++) {
    const step = slow.includes(rank) ? 0.5 : 0.25;
    for (let t = 0; t <= 8; t += step) {
      events.push({ kind: 'metric', run_id: 'r', rank, t: T + t, values: { samples: 32, loss: 1 / (t + 1) } });
    }
  }
  events.sort((a, b) => a.t - b.t);
  live.apply(events.map((event, i) => ({ seq: i + 1, event })));
  return live;
}

function series(y: number[]): Series {
  return { x: y.map((_, i) => i), y };
}

describe('the traces of a figure', () => {
  it('draws one trace per rank in its palette colour, the total in the theme text colour', () => {
    const traces = samplesTraces(liveOf(4), T, 0);
    expect(traces.map(t => t.name)).toEqual([
      'total (mean rank × 4 data-parallel)',
      'rank 0',
      'rank 1',
      'rank 2',
      'rank 3'
    ]);
    const data = scatterData(traces, THEME);
    expect(data[0]?.line.color).toBe(THEME.font);
    expect(data.slice(1).map(t => t.line.color)).toEqual([0, 1, 2, 3].map(rankColor));
    expect(data.every(t => t.type === 'scatter' && t.visible === undefined)).toBe(true);
    // Each trace keeps its identity across redraws, as a uid safe in CSS selectors (PNG export).
    expect(data.map(t => t.uid)).toEqual([
      't-total_20__28_mean_20_rank_20__d7__20_4_20_data-parallel_29_',
      't-rank_20_0',
      't-rank_20_1',
      't-rank_20_2',
      't-rank_20_3'
    ]);
    expect(data.every(t => /^[A-Za-z0-9_-]+$/.test(t.uid))).toBe(true);
    // The per-rank rate of the steady loop: 32 samples / 0.25 s.
    expect(traces[1]?.series.y.at(-1)).toBeCloseTo(128, 6);
  });

  it('grows a plot with its legend entries, so that 16 ranks leave the plot its own height', () => {
    const few = scatterData(samplesTraces(liveOf(2), T, 0), THEME);
    expect(heightWithLegend(240, few)).toBe(240);
    const sixteen = scatterData(samplesTraces(liveOf(BAND_RANKS), T, 0), THEME);
    expect(sixteen.length).toBe(BAND_RANKS + 1);
    expect(heightWithLegend(240, sixteen)).toBe(240 + LEGEND_ROW * (BAND_RANKS + 1 - 3));
    // Above 16 ranks, a band's edges have no legend entry: they add nothing.
    const band = scatterData(samplesTraces(liveOf(BAND_RANKS + 4, [7]), T, 0, new Set([7])), THEME);
    const entries = band.filter(t => t.showlegend !== false).length;
    expect(heightWithLegend(240, band)).toBe(240 + LEGEND_ROW * Math.max(0, entries - 3));
    expect(entries).toBeLessThan(band.length);
  });

  it(`shows the total, a min–median–max band and the stragglers above ${BAND_RANKS} ranks`, () => {
    const live = liveOf(BAND_RANKS + 4, [7]);
    const traces = samplesTraces(live, T, 0, new Set([7]));
    const data = scatterData(traces, THEME);
    expect(data.map(t => t.name)).toEqual([
      'total (mean rank × 20 data-parallel)',
      'min rank',
      'min – max rank',
      'median rank',
      'rank 7 (straggler)'
    ]);
    // The band: its lower edge has no legend entry, its upper edge fills down to it.
    expect(data[1]?.showlegend).toBe(false);
    expect(data[2]?.fill).toBe('tonexty');
    // The straggler is highlighted in its rank's colour.
    expect(data[4]?.line).toMatchObject({ color: rankColor(7), width: 3 });
    // The band spans the ranks: the slow rank is the minimum, the others the maximum.
    expect(traces[1]?.series.y.at(-1)).toBeCloseTo(64, 6);
    expect(traces[2]?.series.y.at(-1)).toBeCloseTo(128, 6);
    // Any rank can be shown: the ranks asked for are drawn too, in their colours.
    const asked = samplesTraces(live, T, 0, new Set([7]), parseRanks('3, 12-13'));
    expect(asked.slice(4).map(t => [t.name, t.color])).toEqual([
      ['rank 3', rankColor(3)],
      ['rank 7 (straggler)', rankColor(7)],
      ['rank 12', rankColor(12)],
      ['rank 13', rankColor(13)]
    ]);
  });

  it(`draws every rank at ${BAND_RANKS} ranks or fewer, the stragglers named and highlighted`, () => {
    const asked: number[] = [];
    const traces = rankTraces(
      null,
      [1, 0],
      rank => {
        asked.push(rank);
        return series([rank]);
      },
      new Set([1]),
      () => {
        throw new Error('no band for few ranks');
      }
    );
    expect(traces.map(t => [t.name, t.highlight ?? false])).toEqual([
      ['rank 0', false],
      ['rank 1 (straggler)', true]
    ]);
    expect(asked).toEqual([0, 1]);
  });

  it('reads the ranks to show: numbers and ranges, anything else skipped, at most 32', () => {
    expect([...parseRanks('3, 17 40-42 x -1 5-')]).toEqual([3, 17, 40, 41, 42]);
    expect(parseRanks('0-1000').size).toBe(32);
    expect(parseRanks('').size).toBe(0);
  });

  it('smooths as TensorBoard does: an EMA debiased at the start, NaN kept', () => {
    expect(smooth([1, 2, 3], 0)).toEqual([1, 2, 3]);
    const out = smooth([10, 10, 10, Number.NaN, 20], 0.5);
    expect(out.slice(0, 3)).toEqual([10, 10, 10]); // no pull towards 0
    expect(out[3]).toBeNaN();
    // (10·0.875·0.5 + 0.5·20) / (1 − 0.5⁴)
    expect(out[4]).toBeCloseTo((0.875 * 10 * 0.5 + 10) / (1 - 0.5 ** 4), 9);
    const data = scatterData([{ name: 'a', series: series([0, 10]) }], THEME, 0.9);
    expect(data[0]?.y[1]).toBeGreaterThan(0);
    expect(data[0]?.y[1]).toBeLessThan(10);
  });

  it('writes the figure data as CSV: a row per point, names quoted, missing values empty', () => {
    const csv = figureCsv(
      [
        { name: 'rank 0', series: { x: [0, 1], y: [1.5, Number.NaN] } },
        { name: 'total (mean, "all")', series: { x: [0], y: [3] } }
      ],
      's since start',
      'samples/s'
    );
    expect(csv).toBe('trace,s since start,samples/s\r\nrank 0,0,1.5\r\nrank 0,1,\r\n"total (mean, ""all"")",0,3\r\n');
    expect(
      matrixCsv(
        [
          [null, 2],
          [3, null]
        ],
        ['rank', 'peer', 'GB/s']
      )
    ).toBe('rank,peer,GB/s\r\n0,1,2\r\n1,0,3\r\n');
    expect(fileName('samples/s')).toBe('samples-s');
    expect(fileName('**')).toBe('figure');
  });

  it('lays out a line plot with a unified hover on x, zoom, and the shared range', () => {
    const layout = lineLayout(THEME, { title: 's', range: [0, 30] }, 240);
    expect(layout).toMatchObject({ hovermode: 'x unified', dragmode: 'zoom', showlegend: true });
    expect(layout.xaxis).toMatchObject({ range: [0, 30], autorange: false });
    expect(lineLayout(THEME, { title: 'bytes', scale: 'bytes' }, 240).xaxis).toMatchObject({ type: 'log' });
    expect(withAlpha('#ff0080', 0.5)).toBe('rgba(255, 0, 128, 0.5)');
    expect(withAlpha(NEUTRAL, 0.5)).toBe(NEUTRAL);
    expect(uidOf('a_b')).not.toBe(uidOf('a b'));
  });

  it('makes room for the tick labels and does not measure each label again to hide it', () => {
    const layout = lineLayout(THEME, { title: 's', range: [0, 30] }, 240);
    for (const axis of [layout.xaxis, layout.yaxis]) {
      expect(axis).toMatchObject({ automargin: true, ticklabeloverflow: 'allow' });
    }
  });

  it('titles the y axis of the system plots with their units, and of no other plot', () => {
    const units = ['sys.cpu_percent', 'sys.rss_mb', 'sys.gpu_mem_mb', 'sys.gpu_util', 'loss'].map(metricUnit);
    expect(units).toEqual(['%', 'MiB', 'MiB', 'GPU %', '']);
    expect(lineLayout(THEME, { title: 's' }, 240, 'MiB').yaxis).toMatchObject({ title: { text: 'MiB' } });
    expect(lineLayout(THEME, { title: 's' }, 240).yaxis).not.toHaveProperty('title');
  });

  it('draws the dots of a trace of one or two points (a line of one point shows nothing)', () => {
    const [one, many] = scatterData(
      [
        { name: 'rank 0', series: series([5]) },
        { name: 'rank 1', series: series([1, 2, 3, 4]) }
      ],
      THEME
    );
    expect(one?.mode).toBe('lines+markers');
    expect(many?.mode).toBe('lines');
  });

  it('gives the heatmap as one z-matrix with one hover template and no per-cell text', () => {
    const n = 256;
    const matrix = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? null : i + j)));
    const [trace, ...rest] = heatmapData(matrix, 'GB/s');
    expect(rest).toEqual([]);
    expect(trace?.z.length).toBe(n);
    expect(trace?.z[3]?.[3]).toBeNull();
    expect(trace?.z[1]?.[2]).toBe(3);
    expect(trace?.hovertemplate).toContain('%{z');
    // The colour scale's ends are the matrix's: plotly need not look through it again.
    expect([trace?.zmin, trace?.zmax]).toEqual([1, 2 * n - 3]);
    expect(trace?.colorbar.ticklabeloverflow).toBe('allow');
    expect(
      heatmapData(
        [
          [null, 2],
          [2, null]
        ],
        'GB/s'
      )[0]
    ).not.toHaveProperty('zmin');
    expect(Object.keys(trace ?? {})).not.toContain('text');
  });
});

/** A clock and timers the gate is driven by. */
function fakeHost(): {
  host: ConstructorParameters<typeof RedrawGate>[1];
  advance: (ms: number) => void;
  setVisible: (v: boolean) => void;
} {
  let now = 0;
  let visible = true;
  let timers: { at: number; fn: () => void }[] = [];
  return {
    host: {
      now: () => now,
      visible: () => visible,
      later: (fn, ms) => {
        const timer = { at: now + ms, fn };
        timers.push(timer);
        return () => {
          timers = timers.filter(t => t !== timer);
        };
      }
    },
    advance: ms => {
      now += ms;
      const due = timers.filter(t => t.at <= now);
      timers = timers.filter(t => t.at > now);
      for (const t of due) {
        t.fn();
      }
    },
    setVisible: v => {
      visible = v;
    }
  };
}

describe('live redraws', () => {
  it('draws at most 2 times a second however often data comes, the latest data last', () => {
    const { host, advance } = fakeHost();
    let draws = 0;
    const gate = new RedrawGate(() => draws++, host);
    for (let ms = 0; ms < 1900; ms += 10) {
      gate.request();
      advance(10);
    }
    expect(draws).toBe(4);
    advance(500);
    expect(draws).toBe(5); // what came after the last draw is drawn once the interval is over
    expect(gate.pending).toBe(false);
  });

  it('waits longer after a slow draw: 10 times its time', () => {
    const { host, advance } = fakeHost();
    const draws: number[] = [];
    const gate = new RedrawGate(() => {
      draws.push(host.now());
      advance(120); // the draw itself takes 120 ms
    }, host);
    for (let ms = 0; ms < 3000; ms += 10) {
      gate.request();
      advance(10);
    }
    expect(draws.length).toBeGreaterThan(2);
    // The first draw (which creates the figure) is not counted; after the second, the gate waits.
    expect((draws[1] as number) - (draws[0] as number)).toBeLessThan(1200);
    for (let i = 2; i < draws.length; i++) {
      expect((draws[i] as number) - (draws[i - 1] as number)).toBeGreaterThanOrEqual(1200);
    }
  });

  it('does not draw while hidden, and draws once when shown again', () => {
    const { host, advance, setVisible } = fakeHost();
    let draws = 0;
    const gate = new RedrawGate(() => draws++, host);
    setVisible(false);
    for (let i = 0; i < 50; i++) {
      gate.request();
      advance(100);
    }
    expect(draws).toBe(0);
    setVisible(true);
    gate.shown();
    expect(draws).toBe(1);
    gate.stop();
    gate.request();
    advance(1000);
    expect(draws).toBe(1);
  });

  it('new data is never drawn inside the task that brought it: a draw is a task of its own', () => {
    const { host, advance } = fakeHost();
    let draws = 0;
    const gate = new RedrawGate(() => draws++, host);
    gate.requestSoon(); // from the panel's render of a stream message: not a long task with it
    expect(draws).toBe(0);
    advance(0);
    expect(draws).toBe(1);
  });

  it('a figure whose first draw is its frame draws the figure in the next task, not an interval later', () => {
    const { host, advance, setVisible } = fakeHost();
    const draws: string[] = [];
    let framed = false;
    const gate: RedrawGate = new RedrawGate(() => {
      if (!framed) {
        framed = true;
        gate.partial();
        draws.push(`frame at ${host.now()}`);
        return;
      }
      draws.push(`figure at ${host.now()}`);
    }, host);
    gate.request();
    expect(draws).toEqual(['frame at 0']); // the figure is not in the frame's task
    expect(gate.pending).toBe(true);
    setVisible(false); // scrolled out of view meanwhile: the frame still gets its figure
    advance(0);
    setVisible(true);
    expect(draws).toEqual(['frame at 0', 'figure at 0']);
    expect(gate.pending).toBe(false);
    // The frame is not counted as a draw: the next redraw is an interval after the figure's.
    gate.request();
    advance(499);
    expect(draws).toHaveLength(2);
    advance(1);
    expect(draws).toEqual(['frame at 0', 'figure at 0', 'figure at 500']);
  });

  it('links the zoom of the stacked plots of one run', () => {
    const link = new XLink();
    const a = {};
    const b = {};
    const seen: unknown[] = [];
    link.subscribe((range, from) => from !== b && seen.push(range));
    link.publish([2, 5], a);
    link.publish(null, a);
    expect(seen).toEqual([[2, 5], null]);
    expect(link.range).toBeNull();
  });
});
