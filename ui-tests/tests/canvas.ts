/**
 * Checks of the panel's canvas figures, shared by the specs: a canvas really
 * painted at the screen's density, the bandwidth heatmap's cells and tooltip,
 * and the extension's chunks (none of them plotly.js any more).
 */
import { expect, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

/** `canvas` is visible, has more than `min` painted pixels and one canvas pixel per screen pixel. */
export async function expectPainted(canvas: Locator, min = 500): Promise<void> {
  await expect(canvas).toBeVisible({ timeout: 30_000 });
  const { painted, sharp } = await canvas.evaluate(node => {
    const c = node as HTMLCanvasElement;
    const pixels = c.getContext('2d')?.getImageData(0, 0, c.width, c.height).data ?? [];
    let n = 0;
    for (let i = 3; i < pixels.length; i += 4) {
      n += pixels[i] ? 1 : 0;
    }
    return { painted: n, sharp: Math.abs(c.width - c.clientWidth * devicePixelRatio) <= devicePixelRatio };
  });
  expect(painted).toBeGreaterThan(min);
  expect(sharp).toBe(true);
}

/** The middle of the heatmap cell of a row and column, in CSS pixels in its canvas. */
export type CellPosition = (row: number, col: number) => { x: number; y: number };

/**
 * The bandwidth heatmap in `figure` for a probe of `n` ranks, every pair measured: painted, each
 * pair's cell coloured and each rank's own cell blank (read at the cells' centres), and hovering
 * the cell of ranks 0 and 1 shows their tooltip (text: the pair, hosts, GB/s) until the mouse
 * leaves. Returns where the cells are.
 */
export async function expectHeatmap(figure: Locator, n: number): Promise<CellPosition> {
  const canvas = figure.getByRole('img');
  await expect(canvas).toHaveAttribute('data-cells', String(n * (n - 1)), { timeout: 30_000 });
  await expectPainted(canvas);
  await expect(canvas).toHaveAttribute('aria-label', new RegExp(`^pair bandwidth \\(GB/s\\): ${n} ranks, `));
  const [left, top, cell] = ((await canvas.getAttribute('data-grid')) ?? '').split(' ').map(Number);
  expect(cell).toBeGreaterThan(1);
  const at: CellPosition = (row, col) => ({
    x: (left as number) + (col + 0.5) * (cell as number),
    y: (top as number) + (row + 0.5) * (cell as number)
  });
  const alpha = await canvas.evaluate(
    (node, points) => {
      const c = node as HTMLCanvasElement;
      const scale = c.width / c.clientWidth;
      const ctx = c.getContext('2d');
      return points.map(p => ctx?.getImageData(Math.floor(p.x * scale), Math.floor(p.y * scale), 1, 1).data[3] ?? -1);
    },
    [at(0, 0), at(0, 1), at(1, 0), at(1, 1)]
  );
  expect(alpha).toEqual([0, 255, 255, 0]);

  const tooltip = figure.getByRole('tooltip');
  await canvas.hover({ position: at(0, 1) });
  await expect(tooltip).toHaveText(/^0↔1 \(\S+ \/ \S+\): \d+\.\d{3} GB\/s$/);
  await canvas.hover({ position: at(1, 1) }); // a rank with itself: nothing measured
  await expect(tooltip).toHaveCount(0);
  await canvas.hover({ position: at(1, 0) });
  await expect(tooltip).toHaveText(/^1↔0 /);
  await figure.locator('figcaption').hover();
  await expect(tooltip).toHaveCount(0);
  return at;
}

/** Each chunk the extension can load (named in its remoteEntry): its size and whether it holds plotly.js. */
export function extensionChunks(
  page: IJupyterLabPageFixture
): Promise<{ name: string; size: number; plotly: boolean }[]> {
  return page.evaluate(async () => {
    const entry = performance
      .getEntriesByType('resource')
      .map(e => e.name)
      .find(name => name.includes('/lab/extensions/jupyter-distributed/static/remoteEntry.'));
    if (!entry) {
      return [];
    }
    // The chunk map of the entry's loader: {526:"5510b668273c9ed9",...} for 526.5510b668273c9ed9.js.
    const loader = await (await fetch(entry)).text();
    const names = new Set([...loader.matchAll(/(\d+):"([0-9a-f]{16})"/g)].map(m => `${m[1]}.${m[2]}.js`));
    return Promise.all(
      [entry, ...[...names].map(name => new URL(name, entry).href)].map(async url => {
        const text = await (await fetch(url)).text();
        return { name: url, size: text.length, plotly: /plotly\.js/.test(text) };
      })
    );
  });
}
