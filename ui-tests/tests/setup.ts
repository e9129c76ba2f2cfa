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
