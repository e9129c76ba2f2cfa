/**
 * Above 64 ranks the Ranks tab shows each node as one line (ranks per state, stragglers, the
 * median and slowest rank's samples/s) with only the ranks worth a look as tiles, not a tile
 * per rank (issue 26: 1,000 ranks from one notebook). 72 real ranks, rank 5 30 % slower.
 */
import { expect, test } from '@jupyterlab/galata';

import { runInPanel } from './setup';

const SLOW = 5;
const CELL = [
  '%%distributed -n 72 --oversubscribe --quiet',
  'import time',
  `period = 0.25 / 0.7 if rank == ${SLOW} else 0.25`,
  'for step in range(8): time.sleep(period); report(samples=32)'
].join('\n');

test.use({ autoGoto: true });

test('72 ranks: one line per node, the straggler keeps its tile, every tile on request', async ({ page }) => {
  test.setTimeout(240_000);
  const p = await runInPanel(page, 'nodes.ipynb', CELL, 180_000);

  await p.getByRole('tab', { name: 'Ranks' }).click();
  const line = p.locator('.jp-Distributed-nodeLine');
  await expect(line).toHaveCount(1); // one host
  await expect(line).toContainText('72 done');
  await expect(line).toContainText('1 straggler(s)');
  await expect(line).toContainText(/median [\d.]+, slowest [\d.]+/);
  // Only the straggler has a tile of its own.
  await expect(p.getByRole('listitem', { name: /^Rank \d+:/ })).toHaveCount(1);
  await expect(p.getByRole('listitem', { name: `Rank ${SLOW}: done, straggler` })).toBeVisible();
  await page.screenshot({ path: test.info().outputPath('nodes-summary.png') });

  await p.getByRole('button', { name: 'Show all 72 ranks' }).click();
  await expect(p.getByRole('listitem', { name: /^Rank \d+: done/ })).toHaveCount(72);
  await p.getByRole('button', { name: 'Fold to the summary' }).click();
  await expect(p.getByRole('listitem', { name: /^Rank \d+:/ })).toHaveCount(1);
});
