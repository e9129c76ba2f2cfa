/**
 * The panel's Probe action against a real server, kernel and ranks: a
 * `%%distributed -n 2` cell, then Probe in the run's header runs
 * `%distributed probe --quick` in that notebook's kernel, on the same
 * cluster, and the panel shows the probe's run in the Scaling tab.
 */
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { expectHeatmap } from './figures';

async function openPanel(page: IJupyterLabPageFixture): Promise<Locator> {
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await expect(p).toBeVisible();
  return p;
}

test.use({ autoGoto: true });

/** A notebook file, so that its kernel starts under its final name (a run records that name). */
function notebook(...sources: string[]): string {
  const cells = sources.map(source => ({
    cell_type: 'code',
    metadata: {},
    source,
    outputs: [],
    execution_count: null
  }));
  const kernelspec = { name: 'python3', display_name: 'Python 3 (ipykernel)', language: 'python' };
  return JSON.stringify({ cells, metadata: { kernelspec }, nbformat: 4, nbformat_minor: 4 });
}

test('Probe in the panel measures the run’s cluster and shows the heatmap', async ({ page, tmpPath }) => {
  const path = `${tmpPath}/probe.ipynb`;
  await page.contents.uploadContent(
    notebook('%load_ext jupyter_distributed', '%%distributed -n 2\nx = rank', '%%distributed -n 2 --pull x\nprint(x)'),
    'text',
    path
  );
  await page.notebook.openByPath(path);
  const p = await openPanel(page);
  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  const header = p.getByRole('group', { name: 'Selected run' });
  await expect(header.getByLabel('Run state')).toHaveText('completed', { timeout: 30_000 });
  await expect(header.locator('.jp-Distributed-runTitle')).toHaveText('local × 2 · probe.ipynb');

  const probe = header.getByRole('button', { name: 'Probe' });
  await expect(probe).toBeEnabled({ timeout: 30_000 }); // once the session list names the notebook
  await probe.click();
  await expect(header.getByRole('button', { name: 'probing…' })).toBeDisabled();
  await page.screenshot({ path: test.info().outputPath('probe-running.png') });

  // The probe's run is selected and shown in the Scaling tab.
  await expect(p.getByRole('tab', { name: 'Scaling' })).toHaveAttribute('aria-selected', 'true', {
    timeout: 60_000
  });
  await expect(p.getByRole('table', { name: 'Links' })).toContainText('intra-node');
  await expect(p.getByRole('heading', { name: /Probe: 2 ranks/ })).toBeVisible();
  await expectHeatmap(p.getByRole('figure', { name: 'bandwidth heatmap' }), 2);
  await expect(header.getByRole('button', { name: 'Probe' })).toBeEnabled();
  await expect(p.getByRole('alert')).toHaveCount(0);
  await page.screenshot({ path: test.info().outputPath('probe-heatmap.png') });

  // The probe ran on the cell's live cluster: the ranks kept their variables.
  await page.notebook.runCell(2);
  await expect(page.locator('.jp-OutputArea-output').last()).toContainText('[rank 1] 1', { timeout: 30_000 });

  // Without a kernel for the notebook the action is off, and says why.
  await page.menu.clickMenuItem('Kernel>Shut Down Kernel');
  await expect(header.getByRole('button', { name: 'Probe' })).toBeDisabled({ timeout: 30_000 });
  await expect(header.getByRole('button', { name: 'Probe' })).toHaveAttribute(
    'title',
    'No running kernel has probe.ipynb open'
  );
});
