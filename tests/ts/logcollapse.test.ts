import { describe, expect, it } from 'vitest';

import { LogBuffer } from '../../labextension/src/logbuffer';
import { LogCollapse, ranksText } from '../../labextension/src/logcollapse';
import { LogViewState } from '../../labextension/src/logstate';
import type { LogLine } from '../../labextension/src/wire';

let seq = 0;
function line(rank: number, text: string, t = 100, stream: 'stdout' | 'stderr' = 'stdout'): LogLine {
  seq += 1;
  return { seq, rank, t, stream, text };
}

function shown(rows: readonly { rank: number; text: string; ranks?: readonly number[] }[]): string[] {
  return rows.map(r => `${r.ranks ? `[ranks ${ranksText(r.ranks)}]` : `[rank ${r.rank}]`} ${r.text}`);
}

describe('the Logs tab’s collapsed view', () => {
  it('compresses ranks into ranges', () => {
    expect(ranksText([5, 0, 1, 2, 3])).toBe('0-3,5');
    expect(ranksText([7, 0, 6, 1])).toBe('0-1,6-7');
    expect(ranksText([2])).toBe('2');
  });

  it('shows the same line of 8 ranks once, labelled with the ranks', () => {
    const lines = [0, 1, 2, 3, 4, 5, 6, 7].map(r => line(r, 'epoch 1 done', 100 + r * 0.01));
    expect(shown(new LogCollapse().rows(lines))).toEqual(['[ranks 0-7] epoch 1 done']);
  });

  it('keeps lines that differ, lines 100 ms apart and other streams per rank', () => {
    const lines = [
      line(0, 'loss 0.5'),
      line(1, 'loss 0.7'),
      line(0, 'late', 100),
      line(1, 'late', 100.2),
      line(0, 'warn', 100.3, 'stdout'),
      line(1, 'warn', 100.3, 'stderr')
    ];
    expect(shown(new LogCollapse().rows(lines))).toEqual([
      '[rank 0] loss 0.5',
      '[rank 1] loss 0.7',
      '[rank 0] late',
      '[rank 1] late',
      '[rank 0] warn',
      '[rank 1] warn'
    ]);
  });

  it('keeps each rank’s order', () => {
    const lines = [line(0, 'b'), line(0, 'a'), line(1, 'a'), line(1, 'b')];
    const rows = shown(new LogCollapse().rows(lines));
    expect(rows).toEqual(['[rank 0] b', '[ranks 0-1] a', '[rank 1] b']);
  });

  it('reads only new lines of a growing array, and starts again on another', () => {
    const buffer = new LogBuffer();
    const collapse = new LogCollapse();
    buffer.push(line(0, 'x'));
    const first = collapse.rows(buffer.filtered({ ranks: [], stderrOnly: false, search: '' }));
    expect(shown(first)).toEqual(['[rank 0] x']);
    const before = first[0];
    buffer.push(line(1, 'x'));
    const grown = collapse.rows(buffer.filtered({ ranks: [], stderrOnly: false, search: '' }));
    expect(shown(grown)).toEqual(['[ranks 0-1] x']);
    expect(grown[0]).not.toBe(before); // a row that gained a rank is new: it renders again
    const only1 = collapse.rows(buffer.filtered({ ranks: [1], stderrOnly: false, search: '' }));
    expect(shown(only1)).toEqual(['[rank 1] x']);
  });

  it('is on by default; expanded, every rank’s line is shown', () => {
    let changes = 0;
    const state = new LogViewState(() => changes++);
    const lines = [line(0, 'same'), line(1, 'same')];
    expect(state.collapsed).toBe(true);
    expect(shown(state.shown(lines))).toEqual(['[ranks 0-1] same']);
    state.setCollapsed(false);
    expect(changes).toBe(1);
    expect(shown(state.shown(lines))).toEqual(['[rank 0] same', '[rank 1] same']);
  });
});
