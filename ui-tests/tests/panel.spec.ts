/**
 * The Distributed panel against a real Jupyter server, kernel and ranks:
 * run a `%%distributed -n 2` cell, then see its ranks, its log lines (HTML
 * shown as text) and its throughput plot; reload and see the same run.
 */
import { expect, test, type IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

const CELL = [
  '%%distributed -n 2',
  'import time',
  'print(f"<b>bold</b> from rank {rank}")',
  'for step in range(6):',
  '    report(samples=64 * (rank + 1), loss=1.0 / (step + 1))',
  '    time.sleep(0.25)'
].join('\n');

function panel(page: IJupyterLabPageFixture): Locator {
  return page.locator('#jupyter-distributed\\:panel');
}

async function openPanel(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = panel(page);
  await expect(p).toBeVisible();
  return p;
}

async function shoot(page: IJupyterLabPageFixture, name: string): Promise<void> {
  await page.screenshot({ path: test.info().outputPath(`${name}.png`) });
  await test.info().attach(name, { path: test.info().outputPath(`${name}.png`) });
}

test.use({ autoGoto: true });

test('a distributed cell shows up in the panel and survives a reload', async ({ page }) => {
  await page.notebook.createNew('panel.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', CELL);
  const p = await openPanel(page);
  await expect(p.getByText('No runs yet')).toBeVisible();

  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  // The cell's own output, tagged by rank.
  await expect(page.locator('.jp-OutputArea-output').last()).toContainText(
    '[rank 1] <b>bold</b> from rank 1'
  );

  // The run just executed is selected and finishes.
  const runs = p.getByRole('listbox', { name: 'Runs' });
  await expect(runs.getByRole('option')).toHaveCount(1);
  await expect(runs.getByRole('option', { selected: true })).toHaveCount(1);
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });
  const runLabel = await runs.getByRole('option', { selected: true }).getAttribute('aria-label');
  expect(runLabel).toMatch(/^Run /);
  await shoot(page, '1-runs');

  await p.getByRole('tab', { name: 'Ranks' }).click();
  const tiles = p.getByRole('listitem', { name: /^Rank \d/ });
  await expect(tiles).toHaveCount(2);
  await expect(p.getByRole('listitem', { name: /^Rank 0: done/ })).toBeVisible();
  await expect(p.getByRole('listitem', { name: /^Rank 1: done/ })).toBeVisible();
  await expect(tiles.first()).toContainText('pid');
  await shoot(page, '2-ranks');

  await p.getByRole('tab', { name: 'Logs' }).click();
  const lines = p.getByRole('list', { name: 'Log lines' });
  await expect(lines).toContainText('<b>bold</b> from rank 0');
  await expect(lines).toContainText('<b>bold</b> from rank 1');
  await expect(lines.locator('b')).toHaveCount(0); // text, never HTML
  await p.getByLabel('Ranks to show').fill('1');
  await expect(lines).not.toContainText('from rank 0');
  await expect(lines).toContainText('from rank 1');
  await shoot(page, '3-logs');

  await p.getByRole('tab', { name: 'Throughput' }).click();
  const plot = p.getByLabel('samples/s plot');
  await expect(plot.locator('.main-svg').first()).toBeVisible({ timeout: 30_000 });
  await expect(plot.locator('.scatterlayer .trace')).toHaveCount(3); // total + 2 ranks
  await expect(p.getByLabel('loss plot')).toBeVisible();
  await shoot(page, '4-throughput');

  // Saved, so that the reloaded notebook starts its kernel without asking.
  await page.evaluate(() =>
    (window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } })
      .jupyterapp.commands.execute('docmanager:save')
  );
  await page.reload({ waitForIsReady: false });
  await page.waitForSelector('#jupyterlab-splash', { state: 'detached' });
  const q = (await panel(page).isVisible()) ? panel(page) : await openPanel(page);
  // Same tab, same run, its plot again.
  await expect(q.getByRole('tab', { name: 'Throughput', selected: true })).toBeVisible();
  await expect(q.getByLabel('Run state')).toHaveText('completed');
  await expect(q.getByLabel('samples/s plot').locator('.main-svg').first()).toBeVisible({
    timeout: 30_000
  });
  await q.getByRole('tab', { name: 'Runs' }).click();
  await expect(q.getByRole('option', { selected: true })).toHaveAttribute('aria-label', runLabel!);
  await shoot(page, '5-after-reload');
});
