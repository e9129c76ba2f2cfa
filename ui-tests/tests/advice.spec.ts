/**
 * The advice in the Scaling tab against a real server and kernel: a small
 * `%distributed advise` (the analytic fallback, one rank: no cluster, no probe)
 * is listed with its badge, its layouts are a table in the Scaling tab, and a
 * row's New cell button puts its launch line into a new cell of the notebook.
 */
import { expect, test } from '@jupyterlab/galata';

import { notebookWith, openPanel } from './setup';

const ADVISE =
  '%distributed advise --global-batch 8 --seq 16 -n 1 --parameters 100000 --layers 2 --hidden 64 --heads 4 --vocab 512';
const LAUNCH = '%%distributed -n 1 --strategy ddp';

test.use({ autoGoto: true });

test('the Scaling tab shows the advice and New cell inserts its launch line', async ({ page }) => {
  await notebookWith(page, 'advice.ipynb', [ADVISE]);
  const p = await openPanel(page);
  await page.notebook.runCell(0);
  await page.notebook.runCell(1, { inplace: true }); // cell 1 stays active: the new cell goes below it
  const output = page.locator('.jp-OutputArea-output').last();
  await expect(output).toContainText('stored as run', { timeout: 30_000 });
  const id = /stored as run (\d{8}-\d{6}-[0-9a-f]+)/.exec((await output.textContent()) ?? '')?.[1];
  expect(id).toBeTruthy();

  // Its own kind in the runs list, never a training run.
  await p.getByRole('tab', { name: 'Runs' }).click();
  const option = p.getByRole('listbox', { name: 'Runs' }).getByRole('option', { name: `Run ${id}` });
  await expect(option.locator('.jp-Distributed-badge')).toHaveText('advice', { timeout: 10_000 });
  await option.click();

  await p.getByRole('tab', { name: 'Scaling' }).click();
  const table = p.getByRole('table', { name: 'Advice' });
  // A launch line and its predicted figures per layout: ddp, then fsdp.
  await expect(table.locator('code')).toHaveText([LAUNCH, '%%distributed -n 1 --strategy fsdp']);
  await expect(table.getByRole('columnheader', { name: 'predicted' })).toBeVisible();
  await expect(table.getByRole('rowgroup', { name: 'ddp dp1' })).toContainText('compute 100 %');
  await expect(p).toContainText('analytic fallback');
  await page.screenshot({ path: test.info().outputPath('advice-table.png') });

  expect(await page.notebook.getCellCount()).toBe(2);
  await table.getByRole('button', { name: `New cell: ${LAUNCH}` }).click();
  await expect.poll(() => page.notebook.getCellCount()).toBe(3);
  expect(await page.notebook.getCellType(2)).toBe('code');
  const [first, comment, ...rest] = (await page.notebook.getCellTextInput(2)).split('\n');
  expect(first).toBe(LAUNCH);
  expect(comment).toMatch(new RegExp(`^# advice ${id}: ddp dp1, predicted \\S+ GiB/rank, \\S+ s/step`));
  expect(rest).toEqual([]);
  await page.screenshot({ path: test.info().outputPath('advice-new-cell.png') });
});
