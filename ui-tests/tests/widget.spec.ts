/**
 * The inline view of `%%distributed --widget` in a real notebook and kernel:
 * the widget under the cell is drawn by the panel's own code (rank tiles and
 * the throughput plot), from the state the kernel syncs.
 */
import { expect, test } from '@jupyterlab/galata';

import { expectTraces } from './figures';

const CELL = [
  '%%distributed -n 2 --widget',
  'import time',
  // One line: the editor's auto-indent cannot change what is typed.
  'for step in range(6): report(samples=64 * (rank + 1)); time.sleep(0.25)'
].join('\n');

test.use({ autoGoto: true });

test('a --widget cell shows its ranks and throughput with the panel code', async ({ page }) => {
  await page.notebook.createNew('widget.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', CELL);
  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  const view = page.locator('.jp-Distributed-inline');
  await expect(view).toBeVisible({ timeout: 30_000 });
  await expect(view.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });
  await expect(view.getByRole('listitem', { name: /^Rank 0: done/ })).toBeVisible();
  await expect(view.getByRole('listitem', { name: /^Rank 1: done/ })).toBeVisible();
  const plot = view.getByLabel('samples/s plot');
  // The panel's figure code: a plotly figure of its total and 2 ranks.
  await expectTraces(plot, ['total (mean rank × 2 data-parallel)', 'rank 0 (straggler)', 'rank 1']);
  await page.screenshot({ path: test.info().outputPath('widget.png') });
});
