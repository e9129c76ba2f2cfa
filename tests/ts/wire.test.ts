import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { rankGroups } from '../../labextension/src/derive';
import { liveFrom, MODULE_VERSION } from '../../labextension/src/inline';
import { probeKey } from '../../labextension/src/probepairs';
import { RunLive } from '../../labextension/src/runstate';
import { probeOf } from '../../labextension/src/scaling';
import type { StreamPart } from '../../labextension/src/stream';
import * as fixtures from './wire.fixtures';

/**
 * The wire fixtures are written by `tests/python/test_wire.py` from the real
 * Python code. `wire.fixtures.ts` holds the same documents, each typed,
 * so `npm run lint` (tsc) checks them against `labextension/src/wire.ts`; here
 * we check that the module still matches the JSON and that the panel's own
 * state code reads them.
 */
const dir = join(__dirname, '..', 'wire');

describe('wire fixtures', () => {
  for (const [name, doc] of Object.entries(fixtures)) {
    it(`${name}.json is what wire.fixtures.ts type-checks`, () => {
      const json: unknown = JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8'));
      expect(doc).toEqual(json);
    });
  }

  it('the runs list counts the probe’s pairs that the run has, and both name the same probe', () => {
    const { run } = fixtures.run;
    const listed = fixtures.runs.runs.find(r => r.id === run.id);
    const listedProbe = listed ? probeOf(listed) : null;
    const wholeProbe = probeOf(run);
    if (!listedProbe || !wholeProbe) {
      throw new Error('the fixture run holds a probe');
    }
    expect(listedProbe.pairs).toBeUndefined();
    expect(wholeProbe.pairs?.length).toBe(1);
    expect(listedProbe.pair_count).toBe(wholeProbe.pairs?.length);
    // The pairs in the run's snapshot stand for the listed probe: no second fetch.
    expect(probeKey(run.id, listedProbe)).toBe(probeKey(run.id, wholeProbe));
  });

  /** The fixture run, as it was when it started, then its stream's parts applied. */
  function replayed(parts: readonly StreamPart[]): RunLive {
    const { run, ranks } = fixtures.run;
    const live = new RunLive(run.id);
    // The snapshot as it was when the run started; the stream brings the rest.
    live.setSnapshot({
      run: { ...run, state: 'running', ended: null, message: '' },
      ranks: ranks.map(r => ({ ...r, state: 'starting' as const, updated: run.started, heartbeat: null }))
    });
    live.apply(parts);
    return live;
  }

  const streams: [string, readonly StreamPart[]][] = [
    ['an object per event', fixtures.stream.events ?? []],
    ['rows batched per node', fixtures.streamnodes.batches ?? []]
  ];
  for (const [name, parts] of streams) {
    it(`a run replayed from its stream (${name}) ends as its snapshot says`, () => {
      const { run, ranks } = fixtures.run;
      const live = replayed(parts);
      expect(live.run?.state).toBe(run.state);
      expect(live.run?.message).toBe(run.message);
      expect(live.failures.map(f => [f.rank, f.kind, f.signal])).toEqual([[1, 'exit', 9]]);
      for (const rank of ranks) {
        expect(live.ranks.get(rank.rank)?.state).toBe(rank.state);
      }
      // The Logs: the lines the logs route serves, and the failed rank's error as its own lines.
      const lines = live.logs.filtered({ ranks: [], stderrOnly: false, search: '' });
      expect(lines.filter(l => l.stream !== 'error').length).toBe(fixtures.logs.lines.length);
      expect(lines.filter(l => l.stream === 'error').map(l => [l.rank, l.text])).toEqual([[1, 'killed by SIGKILL']]);
    });
  }

  it('rows batched per node fold to the same state as the same events one by one', () => {
    const one = replayed(fixtures.stream.events ?? []);
    const batched = replayed(fixtures.streamnodes.batches ?? []);
    expect(fixtures.streamnodes.batches?.length).toBeLessThan(fixtures.stream.events?.length ?? 0);
    const all = { ranks: [], stderrOnly: false, search: '' };
    expect(batched.logs.filtered(all)).toEqual(one.logs.filtered(all));
    expect([...batched.ranks.values()]).toEqual([...one.ranks.values()]);
    expect(batched.metrics).toEqual(one.metrics);
    expect(batched.system).toEqual(one.system);
    expect([...batched.samples.keys()]).toEqual([...one.samples.keys()]);
    expect(batched.stacks).toEqual(one.stacks);
  });
});

describe('the inline widget', () => {
  it('folds the state the kernel syncs with the panel code', () => {
    // The widget's state is a run, its ranks and stream items: the wire documents.
    const live = liveFrom(
      { ...fixtures.run.run, state: 'running', ended: null },
      fixtures.run.ranks.map(r => ({ ...r, state: 'starting' as const })),
      fixtures.stream.events ?? []
    );
    const tiles = rankGroups(live, fixtures.run.run.ended ?? 0).flatMap(g => g.tiles);
    expect(tiles.map(t => [t.rank, t.state])).toEqual([
      [0, 'done'],
      [1, 'failed']
    ]);
    expect(live.run?.state).toBe('failed');
  });

  it('names the module version of the npm package', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(MODULE_VERSION).toBe(pkg.version);
  });
});
