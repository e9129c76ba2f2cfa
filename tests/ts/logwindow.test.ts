import { describe, expect, it } from 'vitest';

import { OVERSCAN, ROW_HEIGHT, rowSlots, slotCount, visibleRows } from '../../labextension/src/logwindow';

describe('log window', () => {
  it('renders the rows in view plus a margin', () => {
    expect(visibleRows(0, 10 * ROW_HEIGHT, 1000)).toEqual([0, 10 + OVERSCAN]);
    expect(visibleRows(500 * ROW_HEIGHT, 10 * ROW_HEIGHT, 1000)).toEqual([500 - OVERSCAN, 510 + OVERSCAN]);
    expect(visibleRows(0, 400, 5)).toEqual([0, 5]);
    expect(visibleRows(0, 400, 0)).toEqual([0, 0]);
  });

  it('has a slot for every row it renders, at any scroll position', () => {
    for (const height of [0, 17, 18, 400, 1001]) {
      for (let top = 0; top < 40 * ROW_HEIGHT; top += 7) {
        const [first, last] = visibleRows(top, height, 100_000);
        expect(last - first).toBeLessThanOrEqual(slotCount(height));
      }
    }
  });

  it('puts row i in slot i % slots, so that scrolling changes only the slots of new rows', () => {
    const slots = slotCount(400);
    const before = rowSlots(100, 100 + slots, slots);
    expect(new Set(before).size).toBe(slots); // every slot used once
    before.forEach((row, slot) => {
      expect((row as number) % slots).toBe(slot);
    });
    const after = rowSlots(103, 103 + slots, slots); // three rows further
    const changed = before.filter((row, slot) => after[slot] !== row);
    expect(changed).toEqual([100, 101, 102]);
  });

  it('leaves slots empty when there are fewer rows, and never overfills', () => {
    expect(rowSlots(0, 3, 5)).toEqual([0, 1, 2, null, null]);
    expect(rowSlots(4, 7, 5)).toEqual([5, 6, null, null, 4]);
    expect(rowSlots(0, 10, 4)).toEqual([0, 1, 2, 3]);
  });
});
