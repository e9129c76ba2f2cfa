import { describe, expect, it } from 'vitest';

import {
  cellAt,
  cellCentre,
  cellText,
  colorStops,
  gridIn,
  gridSide,
  heatmapPixels,
  matrixExtent,
  rankTicks,
  tooltipAt,
  viridis
} from '../../labextension/src/heatmap';

describe('the colour scale', () => {
  it('runs from Viridis dark purple to yellow, through its teal middle', () => {
    expect(viridis(0)).toEqual([68, 1, 84]);
    expect(viridis(1)).toEqual([253, 231, 37]);
    expect(viridis(0.5)).toEqual([33, 145, 140]);
  });

  it('blends between stops and clamps outside 0 to 1', () => {
    // Halfway between the first two stops.
    expect(viridis(1 / 16)).toEqual([70, 23, 104]);
    expect(viridis(-3)).toEqual(viridis(0));
    expect(viridis(7)).toEqual(viridis(1));
    expect(viridis(NaN)).toEqual(viridis(0));
  });

  it('grows lighter from low to high', () => {
    const brightness = (t: number): number => {
      const [r, g, b] = viridis(t);
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    for (let k = 0; k < 10; k++) {
      expect(brightness((k + 1) / 10)).toBeGreaterThan(brightness(k / 10));
    }
  });

  it('gives the colour bar its stops, from 0 to 1', () => {
    const stops = colorStops();
    expect(stops[0]).toEqual([0, 'rgb(68, 1, 84)']);
    expect(stops[stops.length - 1]).toEqual([1, 'rgb(253, 231, 37)']);
  });
});

describe('the matrix as pixels', () => {
  const matrix = [
    [null, 2, 4],
    [2, null, 3],
    [4, 3, null]
  ];

  it('spans the values, without the empty cells', () => {
    expect(matrixExtent(matrix)).toEqual({ min: 2, max: 4 });
    expect(matrixExtent([[null]])).toBeNull();
  });

  it('colours each cell with a value, row by row, and leaves the others transparent', () => {
    const { pixels, cells } = heatmapPixels(matrix, 2, 4);
    expect(cells).toBe(6);
    expect(pixels.length).toBe(3 * 3 * 4);
    const at = (r: number, c: number): number[] => [...pixels.slice((r * 3 + c) * 4, (r * 3 + c) * 4 + 4)];
    expect(at(0, 0)).toEqual([0, 0, 0, 0]);
    expect(at(0, 1)).toEqual([...viridis(0), 255]);
    expect(at(0, 2)).toEqual([...viridis(1), 255]);
    expect(at(1, 2)).toEqual([...viridis(0.5), 255]);
    expect(at(2, 0)).toEqual([...viridis(1), 255]);
  });

  it('colours every value alike, the middle of the scale, when they are all the same', () => {
    const { pixels } = heatmapPixels(
      [
        [null, 5],
        [5, null]
      ],
      5,
      5
    );
    expect([...pixels.slice(4, 8)]).toEqual([...viridis(0.5), 255]);
  });
});

describe('the grid', () => {
  it('fits square cells of whole pixels in the smaller side', () => {
    expect(gridIn(2, 30, 8, 300, 190)).toEqual({ left: 30, top: 8, cell: 95, n: 2 });
    expect(gridIn(3, 0, 0, 100, 200).cell).toBe(33);
    expect(gridSide(gridIn(3, 0, 0, 100, 200))).toBe(99);
  });

  it('keeps cells under one pixel as they are (256 ranks in 200 pixels)', () => {
    expect(gridIn(256, 0, 0, 200, 200).cell).toBeCloseTo(200 / 256);
    expect(gridIn(4, 0, 0, -5, 100).cell).toBe(0);
  });

  it('finds the cell under the mouse, and none outside the grid', () => {
    const grid = gridIn(4, 40, 10, 100, 100); // cells of 25 pixels
    expect(cellAt(grid, 40, 10)).toEqual({ row: 0, col: 0 });
    expect(cellAt(grid, 40 + 25 * 3 + 1, 10 + 26)).toEqual({ row: 1, col: 3 });
    expect(cellAt(grid, 139.9, 109.9)).toEqual({ row: 3, col: 3 });
    expect(cellAt(grid, 140, 50)).toBeNull();
    expect(cellAt(grid, 39, 50)).toBeNull();
    expect(cellAt(grid, 50, 9)).toBeNull();
    expect(cellAt(grid, 50, 110)).toBeNull();
    expect(cellAt(gridIn(4, 0, 0, 0, 0), 0, 0)).toBeNull();
  });

  it('finds cells under one pixel too', () => {
    const grid = gridIn(256, 0, 0, 128, 128); // half a pixel a cell
    expect(cellAt(grid, 127.9, 0.4)).toEqual({ row: 0, col: 255 });
    expect(cellAt(grid, 64, 64)).toEqual({ row: 128, col: 128 });
  });

  it('puts the tooltip under a cell of the upper half, over one of the lower half', () => {
    const grid = gridIn(4, 40, 10, 100, 100); // cells of 25 pixels
    expect(tooltipAt(grid, { row: 1, col: 0 }, 200)).toEqual({ x: 52.5, y: 64, shift: 52.5 / 200, above: false });
    expect(tooltipAt(grid, { row: 2, col: 3 }, 200)).toEqual({ x: 127.5, y: 56, shift: 127.5 / 200, above: true });
  });

  it('shifts the tooltip left by the share of the width right of the cell, so it stays in the canvas', () => {
    const grid = gridIn(2, 0, 0, 100, 100);
    expect(tooltipAt(grid, { row: 0, col: 0 }, 100).shift).toBe(0.25);
    expect(tooltipAt(grid, { row: 0, col: 1 }, 100).shift).toBe(0.75);
    expect(tooltipAt(grid, { row: 0, col: 1 }, 50).shift).toBe(1);
    expect(tooltipAt(grid, { row: 0, col: 1 }, 0).shift).toBe(0);
  });

  it('puts a tick in the middle of its row or column', () => {
    expect(cellCentre(gridIn(4, 40, 10, 100, 100), 2)).toBe(62.5);
  });

  it('ticks whole ranks from 0, every rank when there are few', () => {
    expect(rankTicks(2, 5)).toEqual([0, 1]);
    expect(rankTicks(4, 8)).toEqual([0, 1, 2, 3]);
    expect(rankTicks(1, 5)).toEqual([0]);
    expect(rankTicks(256, 5)).toEqual([0, 50, 100, 150, 200, 250]);
    expect(rankTicks(16, 4)).toEqual([0, 5, 10, 15]);
  });
});

describe('the tooltip', () => {
  const matrix = [
    [null, 12.3456],
    [12.3456, null]
  ];

  it('names the pair, its hosts and the bandwidth', () => {
    expect(cellText(matrix, ['node-a', 'node-b'], 1, 0)).toBe('1↔0 (node-b / node-a): 12.346 GB/s');
  });

  it('says nothing for a cell without a value or outside the matrix', () => {
    expect(cellText(matrix, ['a', 'b'], 0, 0)).toBeNull();
    expect(cellText(matrix, ['a', 'b'], 5, 0)).toBeNull();
  });

  it('keeps a host name as it is (text, for a text node) and copes without one', () => {
    expect(cellText(matrix, ['<b>x</b>'], 0, 1)).toBe('0↔1 (<b>x</b> / ): 12.346 GB/s');
  });
});
