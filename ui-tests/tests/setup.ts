/**
 * Steps the specs share (not a spec): a new notebook that loads the extension,
 * and the Distributed panel opened from the View menu.
 */
import { expect, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

/** A new notebook `name`: `%load_ext jupyter_distributed`, then a code cell per entry of `cells`. */
export async function notebookWith(page: IJupyterLabPageFixture, name: string, cells: string[]): Promise<void> {
  await page.notebook.createNew(name);
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  for (const cell of cells) {
    await page.notebook.addCell('code', cell);
  }
}

/** The Distributed panel, opened from the View menu. */
export async function openPanel(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const panel = page.locator('#jupyter-distributed\\:panel');
  await expect(panel).toBeVisible();
  return panel;
}

/** `notebookWith(name, [cell])` and the panel, both cells run, and the run completed. */
export async function runInPanel(
  page: IJupyterLabPageFixture,
  notebook: string,
  cell: string,
  timeout = 60_000
): Promise<Locator> {
  await notebookWith(page, notebook, [cell]);
  const p = await openPanel(page);
  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout });
  return p;
}
