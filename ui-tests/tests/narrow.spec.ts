/**
 * The panel at its minimum width (JupyterLab's side area's `--jp-sidebar-min-width`): on every
 * tab of a finished 2-rank run, nothing is cut off. Each button, tab, tile, label and figure
 * ends inside the panel (a screenshot of each tab is kept).
 */
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { runInPanel } from './setup';

const CELL = [
  '%%distributed -n 2',
  'import time',
  'print(f"a line from rank {rank}")',
  'for step in range(6): report(samples=32 * (rank + 1), loss=1.0 / (step + 1)); time.sleep(0.2)'
].join('\n');

/** Drag the split handle left of the panel as far right as it goes: the panel's least width. */
async function narrowest(page: IJupyterLabPageFixture, p: Locator): Promise<number> {
  const at = await p.evaluate(panel => {
    const left = panel.getBoundingClientRect().left;
    const handles = [...document.querySelectorAll('.lm-SplitPanel-handle')]
      .map(h => h.getBoundingClientRect())
      .filter(r => r.height > 200 && r.left <= left + 2)
      .sort((a, b) => b.left - a.left);
    const h = handles[0];
    return h ? { x: h.left + h.width / 2, y: h.top + h.height / 2 } : null;
  });
  expect(at).not.toBeNull();
  if (at) {
    await page.mouse.move(at.x, at.y);
    await page.mouse.down();
    await page.mouse.move(page.viewportSize()?.width ?? 1024, at.y, { steps: 8 });
    await page.mouse.up();
  }
  return (await p.boundingBox())?.width ?? 0;
}

/** What sticks out of the panel on the right, or is clipped inside its own box: a list of names. */
function cutOff(p: Locator): Promise<string[]> {
  return p.evaluate(panel => {
    const right = panel.getBoundingClientRect().right + 1;
    const out: string[] = [];
    const selectors = 'button, [role="tab"], label, .jp-Distributed-tile, figure, .jp-Distributed-header span, h3, p';
    for (const el of panel.querySelectorAll<HTMLElement>(selectors)) {
      const rect = el.getBoundingClientRect();
      if (!rect.width || getComputedStyle(el).visibility === 'hidden') {
        continue;
      }
      const name = `${el.tagName.toLowerCase()}.${el.className} "${(el.textContent ?? '').trim().slice(0, 30)}"`;
      if (rect.right > right) {
        out.push(`${name} ends at ${Math.round(rect.right)} > ${Math.round(right)}`);
      } else if (
        el.tagName === 'BUTTON' &&
        (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1)
      ) {
        out.push(`${name} clipped`);
      }
    }
    return out;
  });
}

test.use({ autoGoto: true });

test('at the panel’s minimum width nothing is cut off', async ({ page }) => {
  const p = await runInPanel(page, 'narrow.ipynb', CELL);
  const width = await narrowest(page, p);
  expect(width).toBeLessThan(300);
  for (const tab of ['Runs', 'Ranks', 'Logs', 'Throughput', 'Scaling']) {
    await p.getByRole('tab', { name: tab }).click();
    if (tab === 'Throughput') {
      await expect(p.locator('.js-plotly-plot').first()).toBeVisible({ timeout: 30_000 });
      await page.waitForTimeout(1000);
    }
    await p.screenshot({ path: test.info().outputPath(`narrow-${tab.toLowerCase()}.png`) });
    expect(await cutOff(p), `${tab} at ${width}px`).toEqual([]);
  }
});
