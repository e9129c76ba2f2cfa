/**
 * The Logs tab while lines stream in from a real run: it follows the end; scrolling up stops
 * following and the view stays where the user put it while lines keep arriving; "Resume
 * auto-scroll" goes back to the end. Rows are virtual (only those in view are in the DOM), each
 * with its place in the list (`aria-posinset`).
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

const CELL = [
  '%%distributed -n 2',
  'import time',
  // One line: the editor's auto-indent cannot change what is typed. 3,000 lines per rank in ~20 s.
  'for i in range(3000): print(f"rank {rank} line {i:05d}"); i % 30 or time.sleep(0.2)'
].join('\n');

test.use({ autoGoto: true });

/** The scroller's position: top, and how far from the end. */
async function position(scroller: Locator): Promise<{ top: number; fromEnd: number }> {
  return scroller.evaluate(node => ({
    top: node.scrollTop,
    fromEnd: node.scrollHeight - node.clientHeight - node.scrollTop
  }));
}

/** The scroller's position once it no longer moves (two reads 150 ms apart agree). */
async function settled(scroller: Locator): Promise<{ top: number; fromEnd: number }> {
  let last = Number.NaN;
  await expect
    .poll(
      async () => {
        const { top } = await position(scroller);
        const same = top === last;
        last = top;
        return same;
      },
      { intervals: [150], timeout: 10_000 }
    )
    .toBe(true);
  return position(scroller);
}

/** The text of the row at the top of the view. */
async function topRow(scroller: Locator): Promise<string> {
  const { top } = await position(scroller);
  const index = Math.floor(top / 18) + 2; // a row well inside the view
  return (await scroller.locator(`[aria-posinset="${index}"]`).textContent()) ?? '';
}

test('the log view follows the end until the user scrolls up, and resumes on request', async ({ page }) => {
  await page.notebook.createNew('logs.ipynb');
  await page.notebook.setCell(0, 'code', '%load_ext jupyter_distributed');
  await page.notebook.addCell('code', CELL);
  await page.menu.clickMenuItem('View>Open Distributed Panel');
  const p = page.locator('#jupyter-distributed\\:panel');
  await page.notebook.runCell(0);
  // Started, not awaited: the cell runs for ~20 s and the test goes on while it streams.
  await page.notebook.selectCells(1);
  await page.evaluate(() => {
    type App = { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } };
    void (window as unknown as App).jupyterapp.commands.execute('notebook:run-cell');
  });
  await expect(p.getByLabel('Run state')).toHaveText('running', { timeout: 60_000 });
  await p.getByRole('tab', { name: 'Logs' }).click();
  const scroller = p.getByRole('list', { name: 'Log lines' });
  const count = p.getByRole('status', { name: 'Line count' });
  await expect
    .poll(async () => Number((await count.textContent())?.split(' ')[0]), { timeout: 30_000 })
    .toBeGreaterThan(300);

  // Following: at the end, with only the rows in view (plus a margin) in the DOM.
  await expect.poll(async () => (await position(scroller)).fromEnd).toBeLessThan(2);
  expect(await scroller.getByRole('listitem').count()).toBeLessThan(200);

  // Scrolling up stops following; the view stays put while lines keep arriving.
  await scroller.hover();
  const before = await position(scroller);
  await page.mouse.wheel(0, -1500);
  await expect(p.getByRole('button', { name: 'Resume auto-scroll' })).toBeVisible();
  // The wheel event stops following at once; the browser scrolls for it in a later frame (or
  // several): the view is held where that scroll ends, 1500 px up, not before.
  const held = await settled(scroller);
  expect(held.top).toBeGreaterThan(before.top - 1600); // (scrolled once: lines may have come first)
  expect(held.fromEnd).toBeGreaterThan(1000);
  const text = await topRow(scroller);
  const lines = await count.textContent();
  await expect.poll(() => count.textContent(), { timeout: 10_000 }).not.toBe(lines); // more arrived
  expect((await position(scroller)).top).toBe(held.top);
  expect(await topRow(scroller)).toBe(text);
  expect(text).toMatch(/^\[rank [01]\]rank [01] line \d{5}$/);

  // Resuming goes back to the end and follows it again, to the run's last lines.
  await p.getByRole('button', { name: 'Resume auto-scroll' }).click();
  await expect(p.getByRole('button', { name: 'Pause auto-scroll' })).toBeVisible();
  await expect(p.getByLabel('Run state')).toHaveText('completed', { timeout: 60_000 });
  await expect(count).toHaveText('6000 lines');
  await expect.poll(async () => (await position(scroller)).fromEnd).toBeLessThan(2);
  await expect(scroller.locator('[aria-posinset="6000"]')).toContainText('line 02999');
  await page.screenshot({ path: test.info().outputPath('logs.png') });
});
