/**
 * Stacks of a running cell from the Distributed panel, through the server and the history
 * while the kernel is busy: a `%%distributed -n 2` cell whose rank 1 loops in `time.sleep`,
 * the run's Stacks (every rank), then rank 1's tile's Stacks (that rank only), each showing
 * the stack with the cell's line; then the stop button ends the cell.
 */
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

// One line for the loop: the editor indents typed lines after a colon.
const CELL = ['%%distributed -n 2', 'import time', 'while rank == 1: time.sleep(0.2)', 'rank'].join('\n');
const WHERE = 'rank 1 is at cell line 2: while rank == 1: time.sleep(0.2)';

async function openPanel(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await expect(p).toBeVisible();
  return p;
}

/**
 * The notebook's stop button: interrupt the kernel (through the REST API, as the button does;
 * Galata's proxy of the kernels routes expects JSON where an interrupt answers 204).
 */
async function interruptKernel(page: IJupyterLabPageFixture): Promise<void> {
  const sessions = (await (await page.request.get('/api/sessions')).json()) as { kernel: { id: string } }[];
  expect(sessions).toHaveLength(1);
  const response = await page.request.post(`/api/kernels/${sessions[0]?.kernel.id}/interrupt`);
  expect(response.status()).toBe(204);
}

async function shoot(page: IJupyterLabPageFixture, name: string): Promise<void> {
  await page.screenshot({ path: test.info().outputPath(`${name}.png`) });
  await test.info().attach(name, { path: test.info().outputPath(`${name}.png`) });
}

test.use({ autoGoto: true });

test('the Stacks of a running run and of one rank tile show where rank 1 is', async ({ page }) => {
  await page.notebook.createNew('stacks.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', CELL);
  const p = await openPanel(page);
  await page.notebook.runCell(0);
  const running = page.notebook.runCell(1); // does not end until it is stopped

  // The new run is selected; rank 1 hangs, rank 0 finished the cell.
  await expect(p.getByLabel('Run state')).toHaveText('running', { timeout: 60_000 });
  await p.getByRole('tab', { name: 'Ranks' }).click();
  await expect(p.getByRole('listitem', { name: /^Rank 0: done/ })).toBeVisible({ timeout: 30_000 });

  // The run's Stacks: every rank, through the server and the history (the kernel is busy).
  await p.getByRole('button', { name: 'Stacks', exact: true }).click();
  const stacks = p.getByRole('log', { name: 'Stacks of the ranks' });
  await expect(stacks).toContainText(WHERE, { timeout: 30_000 });
  await expect(p.locator('.jp-Distributed-stacks summary')).toHaveText('Stacks of ranks 0, 1 (request)');
  await expect(stacks).toContainText('--- rank 0 (idle):');
  await shoot(page, '1-run-stacks');

  // Rank 1's tile: that rank only.
  const tile = p.getByRole('listitem', { name: /^Rank 1: / });
  await tile.getByRole('button', { name: 'Stacks of rank 1' }).click();
  await expect(p.locator('.jp-Distributed-stacks summary')).toHaveText('Stacks of rank 1 (request)', {
    timeout: 30_000
  });
  await expect(stacks).toContainText(WHERE);
  await expect(stacks).toContainText(/File "<cell [^"]*>", line 2, in <module>\s+while rank == 1: time\.sleep/);
  await expect(stacks).not.toContainText('rank 0');
  await shoot(page, '2-rank-stacks');

  // The stop button: rank 1 yields at once, the run ends interrupted, the tiles lose their Stacks.
  await interruptKernel(page);
  await running;
  await expect(page.locator('.jp-OutputArea-output').last()).toContainText('KeyboardInterrupt');
  await expect(p.getByLabel('Run state')).toHaveText('interrupted', { timeout: 30_000 });
  await expect(tile.getByRole('button', { name: 'Stacks of rank 1' })).toHaveCount(0);
  await shoot(page, '3-stopped');
});
