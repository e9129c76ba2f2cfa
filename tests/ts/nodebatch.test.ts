import { describe, expect, it } from 'vitest';

import { batchSince, inSeqOrder } from '../../labextension/src/nodebatch';
import type { LogLine, MetricBatch, OutputBatch } from '../../labextension/src/wire';

const line = (seq: number, text = `${seq}`): LogLine => ({ seq, rank: 0, t: 1, stream: 'stdout', text });

describe('rows batched per node', () => {
  it('puts the lines of several nodes in seq order, an error’s lines (one seq) kept together in order', () => {
    const lines = [line(3), line(7), line(5, 'err a'), line(4), line(5, 'err b'), line(6)];
    expect(inSeqOrder(lines).map(l => l.text)).toEqual(['3', '4', 'err a', 'err b', '6', '7']);
    // Far apart (another run's events between): sorted all the same.
    expect(inSeqOrder([line(10_000), line(1), line(500)]).map(l => l.seq)).toEqual([1, 500, 10_000]);
    const ordered = [line(1), line(2)];
    expect(inSeqOrder(ordered)).toBe(ordered);
  });

  it('cuts a batch to the events after a seq, every column alike', () => {
    const output: OutputBatch = {
      kind: 'output',
      node: 'n',
      run_id: 'r',
      stream: 'stdout',
      seq: [4, 8, 9],
      rank: [0, 1, 2],
      t: [1, 2, 3],
      text: ['a', 'b', 'c']
    };
    expect(batchSince(output, 3)).toBe(output);
    expect(batchSince(output, 9)).toBeNull();
    expect(batchSince(output, 4)).toEqual({ ...output, seq: [8, 9], rank: [1, 2], t: [2, 3], text: ['b', 'c'] });
    const metric: MetricBatch = {
      kind: 'metric',
      node: 'n',
      run_id: 'r',
      seq: [4, 8],
      rank: [0, 1],
      t: [1, 2],
      values: { samples: [1, 2], loss: [0.5, 0.4] }
    };
    expect(batchSince(metric, 5)).toEqual({
      ...metric,
      seq: [8],
      rank: [1],
      t: [2],
      values: { samples: [2], loss: [0.4] }
    });
  });
});
