/**
 * The Scaling tab against a real server, kernel and ranks: two runs of one
 * cell at 1 and 2 ranks give the Compare view (samples/s against world size,
 * ideal line, efficiency), and `%distributed probe` gives the bandwidth
 * heatmap and the per-link table.
 */
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { expectHeatmap, expectTraces, tracesOf } from './figures';

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
  // Measured and ideal, a point per world size: a plotly figure with their legend.
  const compare = p.getByRole('figure', { name: 'samples/s against world size' });
  await expectTraces(compare, ['measured', 'ideal']);
  await expect.poll(async () => (await tracesOf(compare)).map(t => t.points), { timeout: 30_000 }).toEqual([2, 2]);
  await expect(compare.locator('.legend .traces')).toHaveCount(2);
  await page.screenshot({ path: test.info().outputPath('scaling-compare.png') });

  await page.notebook.runCell(3);
  const output = page.locator('.jp-OutputArea-output').last();
  await expect(output).toContainText('all_reduce bus GB/s', { timeout: 60_000 });
  // The probe's run, by the id the cell printed: the panel's list shows it at its next poll.
  const probeRun = /probe (\S+): /.exec((await output.textContent()) ?? '')?.[1];
  expect(probeRun).toBeTruthy();
  await p.getByRole('tab', { name: 'Runs' }).click();
  await p
    .getByRole('listbox', { name: 'Runs' })
    .getByRole('option', { name: `Run ${probeRun}` })
    .click();
  await p.getByRole('tab', { name: 'Scaling' }).click();
  await expect(p.getByRole('table', { name: 'Links' })).toContainText('intra-node');
  const heatmap = p.getByRole('figure', { name: 'bandwidth heatmap' });
  await expectHeatmap(heatmap, 2);
  // The runs list counts the probe's pairs without sending them: the heatmap's came with the run.
  const listed = (await (await page.request.get('/jupyter-distributed/api/runs')).json()) as {
    runs: { summary: { probe?: { pairs?: unknown; pair_count?: number } } }[];
  };
  expect(listed.runs[0]?.summary.probe).toMatchObject({ pair_count: 1 });
  expect(listed.runs[0]?.summary.probe?.pairs).toBeUndefined();
  // The all_reduce curve: a point per size measured (1K and 64K asked), on a log axis of sizes.
  const curve = p.getByRole('figure', { name: 'all_reduce curve' });
  await expectTraces(curve, ['all_reduce']);
  expect((await tracesOf(curve))[0]?.points).toBeLessThanOrEqual(2);
  await page.screenshot({ path: test.info().outputPath('scaling-probe.png') });
});
