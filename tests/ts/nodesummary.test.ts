import { describe, expect, it } from 'vitest';
import type { HostGroup, RankTile, TileState } from '../../labextension/src/derive';
import { NODE_SUMMARY_ABOVE, nodeSummary, summarised } from '../../labextension/src/nodesummary';

function tile(rank: number, state: TileState, rate: number | null, straggler = false): RankTile {
  return {
    rank,
    host: 'n0',
    pid: 100 + rank,
    state,
    heartbeatAge: 0,
    samplesPerSec: rate,
    color: '#000',
    progress: null,
    gpuMemMb: null,
    gpuUtil: null,
    straggler,
    dp: rank,
    pp: null,
    tp: null,
    role: ''
  };
}

describe('node summaries (many ranks)', () => {
  it('count the ranks per state and keep a tile for the failed, stalled and straggling ones', () => {
    const tiles = Array.from({ length: 100 }, (_, r) => tile(r, 'running', 100));
    tiles[7] = tile(7, 'failed', null);
    tiles[40] = tile(40, 'stalled', 100);
    tiles[63] = tile(63, 'running', 60, true);
    const summary = nodeSummary({ host: 'n0', tiles });
    expect(summary.ranks).toBe(100);
    expect(summary.states).toEqual([
      ['failed', 1],
      ['stalled', 1],
      ['running', 98]
    ]);
    expect(summary.stragglers).toBe(1);
    expect(summary.slowest).toBe(60);
    expect(summary.medianRate).toBe(100);
    expect(summary.notable.map(t => t.rank)).toEqual([7, 40, 63]);
  });

  it('start above NODE_SUMMARY_ABOVE ranks in the whole run, counted over every node', () => {
    const group = (host: string, n: number, from: number): HostGroup => ({
      host,
      tiles: Array.from({ length: n }, (_, i) => tile(from + i, 'running', null))
    });
    expect(summarised([group('a', NODE_SUMMARY_ABOVE, 0)])).toBe(false);
    expect(summarised([group('a', NODE_SUMMARY_ABOVE / 2, 0), group('b', NODE_SUMMARY_ABOVE / 2 + 1, 64)])).toBe(true);
    const none = nodeSummary(group('a', 3, 0));
    expect(none.slowest).toBeNull();
    expect(none.notable).toEqual([]);
  });
});
