/**
 * A 16-rank cell, paced with `time.sleep` (so that 2 cores are enough), where rank 5 runs 30 %
 * slower than the others. Its rate, as the cell measures it from its own timestamps, is below the
 * straggler rule's threshold: the panel marks rank 5 (its tile, its line in the samples/s plot,
 * named and drawn thicker) in the default view, its tile's rate agrees with the cell's, and
 * `%distributed compare` names the same rank.
 */
import { expect, test } from '@jupyterlab/galata';

import { graphOf, tracesOf } from './figures';

const SLOW = 5;
const STEPS = 16;
const CELL = [
  // 16 ranks on 2 cores: they sleep most of the time.
  '%%distributed -n 16 --oversubscribe',
  'import time',
  // Rank 5 sleeps 1/0.7 times as long per step: 30 % fewer samples/s.
  `period = 0.25 / 0.7 if rank == ${SLOW} else 0.25`,
  'stamps = []',
  // One line: the editor would indent the line after a block.
  `for step in range(${STEPS}): time.sleep(period); report(samples=32); stamps.append(time.time())`,
  // The rate by the cell's own clock, as the panel defines it: the samples after the first
  // report, over the time from the first report to the last.
  // (The rank in the line: equal lines of several ranks are shown once.)
  'print(f"own rate of {rank}: {32 * (len(stamps) - 1) / (stamps[-1] - stamps[0]):.3f}")'
].join('\n');

test.use({ autoGoto: true });

test('a rank 30 % slower among 16 is marked as a straggler, and compare names it', async ({ page }) => {
  test.setTimeout(240_000);
  await page.notebook.createNew('straggler.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', CELL);
  await page.notebook.addCell('code', '%distributed compare');
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await expect(p).toBeVisible();

  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  const output = page.locator('.jp-Cell-outputArea').nth(1);
  await expect(output).toContainText(`own rate of ${SLOW}:`, { timeout: 120_000 });
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout: 60_000 });
  // The known rates: what each rank measured by its own clock.
  const own = new Map<number, number>();
  for (const m of ((await output.textContent()) ?? '').matchAll(/own rate of (\d+): ([\d.]+)/g)) {
    own.set(Number(m[1]), Number(m[2]));
  }
  expect(own.size).toBe(16);
  const others = [...own].filter(([r]) => r !== SLOW).map(([, v]) => v);
  const median = others.sort((a, b) => a - b)[Math.floor(others.length / 2)] as number;
  const ratio = (own.get(SLOW) as number) / median;
  expect(ratio).toBeGreaterThan(0.6);
  expect(ratio).toBeLessThan(0.78);

  // The default view: rank 5's tile, and no other, is marked; its rate is the cell's.
  await p.getByRole('tab', { name: 'Ranks' }).click();
  await expect(p.getByRole('listitem', { name: /^Rank \d+: done/ })).toHaveCount(16);
  const tile = p.getByRole('listitem', { name: `Rank ${SLOW}: done, straggler` });
  await expect(tile).toBeVisible();
  await expect(p.getByRole('listitem', { name: /straggler/ })).toHaveCount(1);
  const shown = Number(/([\d.]+) samples\/s \(rank\)/.exec((await tile.textContent()) ?? '')?.[1]);
  expect(Math.abs(shown / (own.get(SLOW) as number) - 1)).toBeLessThan(0.02);
  await page.screenshot({ path: test.info().outputPath('straggler-ranks.png') });

  // Its line in the samples/s plot is named and drawn thicker than the 15 others.
  await p.getByRole('tab', { name: 'Throughput' }).click();
  const plot = p.getByLabel('samples/s plot');
  await expect(graphOf(plot)).toHaveAttribute('data-traces', '17', { timeout: 30_000 });
  const names = (await tracesOf(plot)).map(t => t.name);
  expect(names.filter(n => n.includes('straggler'))).toEqual([`rank ${SLOW} (straggler)`]);
  const widths = await graphOf(plot).evaluate(node =>
    Object.fromEntries(
      ((node as unknown as { data: { name: string; line: { width: number } }[] }).data ?? []).map(t => [
        t.name,
        t.line.width
      ])
    )
  );
  expect(widths[`rank ${SLOW} (straggler)`]).toBeGreaterThan(widths['rank 0'] as number);
  await page.screenshot({ path: test.info().outputPath('straggler-throughput.png') });

  // %distributed compare, in the notebook, names the same rank.
  await page.notebook.runCell(2);
  await expect(page.locator('.jp-Cell-outputArea').nth(2)).toContainText(`stragglers: rank(s) [${SLOW}]`, {
    timeout: 60_000
  });
});

test('above 16 ranks, a rank is added to the plots from its tile and removed by its chip', async ({ page }) => {
  test.setTimeout(240_000);
  await page.notebook.createNew('many.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell(
    'code',
    '%%distributed -n 17 --oversubscribe\nimport time\nfor step in range(4): report(samples=32); time.sleep(0.25)'
  );
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout: 120_000 });
  const plot = p.getByLabel('samples/s plot');
  const names = async (): Promise<string[]> => (await tracesOf(plot)).map(t => t.name);

  // The default view: the total and the band, no rank 9.
  await p.getByRole('tab', { name: 'Throughput' }).click();
  await expect.poll(names, { timeout: 30_000 }).toContain('min – max rank');
  expect(await names()).not.toContain('rank 9');

  // Rank 9's tile adds its line; its chip in the Throughput tab removes it.
  await p.getByRole('tab', { name: 'Ranks' }).click();
  await p.getByRole('button', { name: 'Plot rank 9' }).click();
  await expect(p.getByRole('button', { name: 'Plot rank 9' })).toHaveAttribute('aria-pressed', 'true');
  await p.getByRole('tab', { name: 'Throughput' }).click();
  await expect.poll(names, { timeout: 30_000 }).toContain('rank 9');
  await page.screenshot({ path: test.info().outputPath('rank-shown.png') });
  await p.getByRole('button', { name: 'Stop showing rank 9' }).click();
  await expect.poll(names, { timeout: 30_000 }).not.toContain('rank 9');
});
