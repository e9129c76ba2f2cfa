/**
 * Checks of the panel's plotly figures, shared by the specs: plotly's graph
 * div (`.js-plotly-plot`) with its `data` (one trace per rank), the bandwidth
 * heatmap as one z-matrix and its hover, and the extension's chunks (plotly.js
 * in one lazy chunk of its own).
 */
import { expect, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

/** What a test reads of a trace of plotly's graph div. */
export interface ITraceSeen {
  type: string;
  name: string;
  visible: boolean | string;
  color: string | null;
  points: number;
}

/** The graph div of `figure`: plotly's, drawn. */
export function graphOf(figure: Locator): Locator {
  return figure.locator('.js-plotly-plot');
}

/** The traces of `figure`'s graph div as plotly holds them (`gd.data`). */
export function tracesOf(figure: Locator): Promise<ITraceSeen[]> {
  return graphOf(figure).evaluate(node =>
    ((node as unknown as { data?: Record<string, unknown>[] }).data ?? []).map(t => ({
      type: String(t.type),
      name: String(t.name ?? ''),
      visible: (t.visible as boolean | string | undefined) ?? true,
      color: ((t.line as { color?: string } | undefined)?.color ?? null) as string | null,
      points: Array.isArray(t.z) ? (t.z as unknown[]).length : Array.isArray(t.y) ? (t.y as unknown[]).length : 0
    }))
  );
}

/**
 * The graph div's box is as tall as plotly's figure in it: the box is size-contained
 * (`contain: strict`), so a box left at its least height would cut the figure's lower part off.
 */
export async function expectWhole(figure: Locator): Promise<void> {
  await expect
    .poll(
      () =>
        graphOf(figure).evaluate(node => {
          const svg = node.querySelector('.main-svg');
          return svg ? Math.round(node.getBoundingClientRect().height - svg.getBoundingClientRect().height) : null;
        }),
      { timeout: 30_000 }
    )
    .toBeGreaterThanOrEqual(0);
}

/** `figure` is a plotly figure whose traces are named `names`, in order, each with points. */
export async function expectTraces(figure: Locator, names: (string | RegExp)[]): Promise<ITraceSeen[]> {
  await expect(graphOf(figure)).toBeVisible({ timeout: 30_000 });
  await expectWhole(figure);
  await expect
    .poll(async () => (await tracesOf(figure)).map(t => t.name), { timeout: 30_000 })
    .toEqual(names.map(n => (typeof n === 'string' ? n : expect.stringMatching(n))));
  const traces = await tracesOf(figure);
  for (const t of traces) {
    expect(t.points, t.name).toBeGreaterThan(0);
  }
  return traces;
}

/**
 * The bandwidth heatmap in `figure` for a probe of `n` ranks, every pair measured: one heatmap
 * trace, an n × n z-matrix with each rank's own cell empty, and hovering it shows plotly's hover
 * label naming a pair and its GB/s.
 */
export async function expectHeatmap(figure: Locator, n: number): Promise<void> {
  await expect(graphOf(figure)).toBeVisible({ timeout: 30_000 });
  await expect
    .poll(async () => (await tracesOf(figure)).map(t => [t.type, t.points]), { timeout: 30_000 })
    .toEqual([['heatmap', n]]);
  await expectWhole(figure);
  const cells = await graphOf(figure).evaluate(node => {
    const z = ((node as unknown as { data: { z: (number | null)[][] }[] }).data[0] as { z: (number | null)[][] }).z;
    return { diagonal: z.every((row, i) => row[i] === null), measured: z.flat().filter(v => v !== null).length };
  });
  expect(cells).toEqual({ diagonal: true, measured: n * (n - 1) });
  const box = await graphOf(figure).locator('.nsewdrag').first().boundingBox();
  expect(box).not.toBeNull();
  if (box) {
    // The cell of row 0, column n − 1: measured.
    await figure.page().mouse.move(box.x + box.width * (1 - 0.5 / n), box.y + box.height * (0.5 / n), { steps: 5 });
    await expect(graphOf(figure).locator('.hoverlayer')).toContainText(/GB\/s/);
  }
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
        return { name: url, size: text.length, plotly: /js-plotly-plot/.test(text) };
      })
    );
  });
}
