/**
 * The Scaling tab against a real server, kernel and ranks: two runs of one
 * cell at 1 and 2 ranks give the Compare view (samples/s against world size,
 * ideal line, efficiency), and `%distributed probe` gives the bandwidth
 * heatmap and the per-link table.
 */
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

const BODY = ['import time', 'for step in range(5):', '    time.sleep(0.1 * world_size)', '    report(samples=32)'];

async function openPanel(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await expect(p).toBeVisible();
  return p;
}

test.use({ autoGoto: true });

test('the Scaling tab compares runs of a cell and shows a probe heatmap', async ({ page }) => {
  await page.notebook.createNew('scaling.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', ['%%distributed -n 1', ...BODY].join('\n'));
  await page.notebook.addCell('code', ['%%distributed -n 2', ...BODY].join('\n'));
  await page.notebook.addCell('code', '%distributed probe --quick --sizes 1K,64K');
  const p = await openPanel(page);
  for (const cell of [0, 1, 2]) {
    await page.notebook.runCell(cell);
  }
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });

  await p.getByRole('tab', { name: 'Scaling' }).click();
  const table = p.getByRole('table', { name: 'Efficiency' });
  await expect(table.getByRole('row')).toHaveCount(3); // header + 1 and 2 ranks
  await expect(table.getByRole('row').nth(1)).toContainText('100%');
  await expect(
    p.getByRole('figure', { name: 'samples/s against world size' }).locator('.main-svg').first()
  ).toBeVisible();
  await page.screenshot({ path: test.info().outputPath('scaling-compare.png') });

  await page.notebook.runCell(3);
  await expect(page.locator('.jp-OutputArea-output').last()).toContainText('all_reduce bus GB/s', {
    timeout: 60_000
  });
  await p.getByRole('tab', { name: 'Runs' }).click();
  await p.getByRole('listbox', { name: 'Runs' }).getByRole('option').first().click();
  await p.getByRole('tab', { name: 'Scaling' }).click();
  await expect(p.getByRole('table', { name: 'Links' })).toContainText('intra-node');
  await expect(p.getByRole('figure', { name: 'bandwidth heatmap' }).locator('.main-svg').first()).toBeVisible();
  await page.screenshot({ path: test.info().outputPath('scaling-probe.png') });
});
