import { describe, expect, it } from 'vitest';

import { bandwidthMatrix, compareRows, probeOf, sweepRows } from '../../labextension/src/scaling';
import { makeRun } from './fakes';

describe('compareRows', () => {
  it('gives ideal scaling and efficiency against the smallest run of the same cell', () => {
    const one = makeRun('a', 1, { world_size: 1, summary: { throughput: 100, global_batch: 32 } });
    const two = makeRun('b', 2, {
      world_size: 2,
      summary: { throughput: 150, global_batch: 64, previous_global_batch: 32 }
    });
    const other = makeRun('c', 3, { world_size: 4, source: 'other cell', summary: { throughput: 1 } });
    const rows = compareRows([two, other, one], two);
    expect(rows.map(r => [r.id, r.worldSize, r.ideal, r.efficiency])).toEqual([
      ['a', 1, 100, 1],
      ['b', 2, 200, 0.75]
    ]);
    expect(rows[1]?.warning).toContain('global batch changed from 32 to 64');
    expect(compareRows([other], one)).toEqual([]);
  });
});

describe('sweepRows', () => {
  it('lists the runs of the selected run’s sweep side by side', () => {
    const a = makeRun('a', 1, { sweep_id: 's1', summary: { sweep: { lr: 0.1 }, final: { loss: 0.25 } } });
    const b = makeRun('b', 2, { sweep_id: 's1', state: 'failed', summary: { sweep: { lr: 0.2 } } });
    const c = makeRun('c', 3, { sweep_id: 's2' });
    expect(sweepRows([b, c, a], a).map(r => [r.values, r.state, r.final])).toEqual([
      ['lr=0.1', 'running', 'loss 0.25'],
      ['lr=0.2', 'failed', '']
    ]);
    expect(sweepRows([a], makeRun('d', 4))).toEqual([]);
  });
});

describe('probe', () => {
  it('turns the pairs into a symmetric bandwidth matrix', () => {
    const run = makeRun('p', 1, {
      summary: {
        probe: {
          run_id: 'p',
          library: 'mpi4py',
          world_size: 3,
          hosts: ['h1', 'h1', 'h2'],
          pairs: [
            { a: 0, b: 1, link: 'intra', bandwidth_gbs: 5, latency_us: 2 },
            { a: 0, b: 2, link: 'inter', bandwidth_gbs: 1, latency_us: 20 },
            { a: 1, b: 2, link: 'inter', bandwidth_gbs: 2, latency_us: 30 }
          ],
          groups: {},
          allreduce: []
        }
      }
    });
    const probe = probeOf(run);
    expect(probe).not.toBeNull();
    expect(bandwidthMatrix(3, probe?.pairs ?? [])).toEqual([
      [null, 5, 1],
      [5, null, 2],
      [1, 2, null]
    ]);
    expect(probeOf(makeRun('x', 1))).toBeNull();
  });
});
