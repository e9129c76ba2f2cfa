/**
 * The steps many tests begin with: a new notebook that loads the extension, one `%%distributed`
 * cell, the Distributed panel opened, both cells run, and the run completed.
 */
import { expect, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

export async function runInPanel(
  page: IJupyterLabPageFixture,
  notebook: string,
  cell: string,
  timeout = 60_000
): Promise<Locator> {
  await page.notebook.createNew(notebook);
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', cell);
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await expect(p).toBeVisible();
  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout });
  return p;
}
