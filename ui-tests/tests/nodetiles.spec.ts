/**
 * Above 128 nodes the Ranks tab shows each node as a small tile and the run as one line, with
 * a node's every rank a click away (issue 26: 10,000 ranks are 1,250 nodes of 8). A synthetic
 * run of 2,000 ranks on 250 hosts is written into the store as a kernel would
 * (`benchmarks/feed_panel.py`), with one rank slower than its peers.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { expect, test } from '@jupyterlab/galata';

import { openPanel } from './setup';

test.use({ autoGoto: true });

test('2,000 ranks on 250 nodes: a tile per node, a node opened on a click', async ({ page }) => {
  test.setTimeout(180_000);
  const p = await openPanel(page);
  const stop = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nodetiles-')), 'stop');
  const feeder = spawn(
    'python',
    [
      path.join(__dirname, '..', '..', 'benchmarks', 'feed_panel.py'),
      process.env.JUPYTER_DISTRIBUTED_STORE as string,
      '--seconds',
      '150',
      '--stop-file',
      stop,
      '--ranks',
      '2000',
      '--hosts',
      '250',
      '--lines-per-second',
      '100'
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  );
  const exited = new Promise<number | null>(resolve => feeder.on('exit', resolve));
  const first = await new Promise<string>(resolve =>
    readline.createInterface({ input: feeder.stdout }).once('line', line => resolve(line))
  );
  try {
    const { run } = JSON.parse(first) as { run: string };
    await p.getByRole('option', { name: `Run ${run}` }).click();
    await p.getByRole('tab', { name: 'Ranks' }).click();

    await expect(p.getByRole('status').filter({ hasText: '2000 ranks on 250 nodes' })).toBeVisible({
      timeout: 30_000
    });
    const nodes = p.getByRole('group', { name: 'Nodes' }).getByRole('button');
    await expect(nodes).toHaveCount(250);
    // No section (and no tile) per node until one is opened.
    await expect(p.getByRole('region', { name: /^Host / })).toHaveCount(0);
    await page.screenshot({ path: test.info().outputPath('nodetiles.png') });

    const node = p.getByRole('button', { name: /^Node node3: 8 / });
    await node.click();
    await expect(node).toHaveAttribute('aria-pressed', 'true');
    const section = p.getByRole('region', { name: 'Host node3' });
    await expect(section.getByRole('listitem', { name: /^Rank 2[4-9]:|^Rank 3[01]:/ })).toHaveCount(8);
    await section.getByRole('button', { name: 'Fold to the summary' }).click();
    await expect(p.getByRole('region', { name: 'Host node3' })).toHaveCount(0);
    await expect(node).toHaveAttribute('aria-pressed', 'false');
  } finally {
    fs.writeFileSync(stop, '');
    const code = await exited;
    fs.rmSync(path.dirname(stop), { recursive: true, force: true });
    expect(code).toBe(0);
  }
});
