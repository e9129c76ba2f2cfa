/**
 * Opening a rank's image from the panel's Logs: a figure (PNG) and an SVG that
 * carries a script, each shown as an <img> from the history; nothing of the
 * SVG becomes part of the page.
 */
import { expect, test } from '@jupyterlab/galata';

const CELL = [
  '%%distributed -n 1',
  'import matplotlib.pyplot as plt',
  'from IPython.display import SVG, display',
  'plt.plot([1, 3, 2])',
  'plt.show()',
  'svg = \'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">\'',
  'svg += \'<script>window.pwned = 1</script><rect width="40" height="20" fill="red"/></svg>\'',
  'display(SVG(svg))'
].join('\n');

test.use({ autoGoto: true });

test("a display's image opens from its log line", async ({ page }) => {
  await page.notebook.createNew('image.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', CELL);
  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  // The second cell's output area (running a cell adds an empty one below it).
  await expect(page.locator('.jp-Cell-outputArea').nth(1)).toContainText('[rank 0] image/svg+xml');

  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });
  await p.getByRole('tab', { name: 'Logs' }).click();

  await p.getByRole('button', { name: /^Open the image of rank 0: image\/png \d+×\d+$/ }).click();
  const region = p.getByRole('region', { name: /^Image of display \d+$/ });
  const png = region.getByRole('img', { name: /^\[rank 0\] image\/png/ });
  await expect(png).toHaveAttribute('src', /^data:image\/png;base64,/);
  await expect.poll(() => png.evaluate(img => (img as HTMLImageElement).naturalWidth)).toBeGreaterThan(100);
  await page.screenshot({ path: test.info().outputPath('image-png.png') });

  await p.getByRole('button', { name: /^Open the image of rank 0: image\/svg\+xml/ }).click();
  const svg = region.getByRole('img', { name: /^\[rank 0\] image\/svg\+xml/ });
  await expect(svg).toHaveAttribute('src', /^data:image\/svg\+xml;charset=utf-8,%3Csvg/);
  await expect.poll(() => svg.evaluate(img => (img as HTMLImageElement).naturalWidth)).toBe(40);
  expect(await p.locator('svg script, script').count()).toBe(0);
  expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

  await region.getByRole('button', { name: 'Close' }).click();
  await expect(region).toHaveCount(0);
});
