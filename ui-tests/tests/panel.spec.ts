/**
 * The Distributed panel against a real Jupyter server, kernel and ranks:
 * run a `%%distributed -n 2` cell, then see its ranks (following a changed
 * setting), its log lines and plot titles (HTML shown as text), its
 * throughput plots and its Scaling plot (plotly figures: hover, legend
 * toggle, PNG export; plotly.js in a lazy chunk of its own); reload and see the same run restored from the workspace;
 * switch to the dark theme and see the plots follow it.
 */
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { expectTraces, extensionChunks, graphOf, tracesOf } from './figures';

const CELL = [
  '%%distributed -n 2',
  'import time',
  'print(f"<b>bold</b> from rank {rank}")',
  'for step in range(6):',
  "    report(samples=64 * (rank + 1), loss=1.0 / (step + 1), **{'<i>lr</i>': 0.01})",
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

/** A line plot drawn by plotly with `traces` traces, each with its legend entry. */
async function expectDrawn(plot: Locator, traces: number): Promise<void> {
  await expect(graphOf(plot)).toHaveAttribute('data-traces', String(traces), { timeout: 30_000 });
  await expect(plot.locator('.legend .traces')).toHaveCount(traces);
}

/** The sizes of the files of ours that the page has loaded (its resource timing entries). */
function extensionScripts(page: IJupyterLabPageFixture): Promise<number[]> {
  return page.evaluate(
    () =>
      new Promise<number[]>(resolve => {
        new PerformanceObserver((list, observer) => {
          observer.disconnect();
          resolve(
            list
              .getEntries()
              .filter(e => e.name.includes('/lab/extensions/jupyter-distributed/static/'))
              .map(e => (e as PerformanceResourceTiming).decodedBodySize)
          );
        }).observe({ type: 'resource', buffered: true });
      })
  );
}

/** A CSS colour as the page computes it (`rgb(...)`), to compare colours written differently. */
function cssColor(page: IJupyterLabPageFixture, color: string): Promise<string> {
  return page.evaluate(c => {
    const probe = document.createElement('div');
    probe.style.color = c;
    document.body.appendChild(probe);
    const computed = getComputedStyle(probe).color;
    probe.remove();
    return computed;
  }, color);
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
  // The server's history is shared by the specs: count what is there once the list has loaded
  // (until the first reply the panel says "Loading runs…", never "No runs yet").
  const runs = p.getByRole('listbox', { name: 'Runs' });
  await expect(p.getByText('No runs yet').or(runs.getByRole('option').first())).toBeVisible();
  await expect(p.getByText('Loading runs…')).toHaveCount(0);
  const before = await runs.getByRole('option').count();

  await page.notebook.runCell(0);
  await page.notebook.runCell(1);
  // The cell's own output, tagged by rank.
  await expect(page.locator('.jp-OutputArea-output').last()).toContainText('[rank 1] <b>bold</b> from rank 1');

  // The run just executed is selected and finishes.
  await expect(runs.getByRole('option')).toHaveCount(before + 1);
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
  // Rank 0 reports half of rank 1's samples: below the server's c.Distributed.straggler_threshold
  // (0.8, the rule %distributed compare uses too).
  await expect(p.getByRole('listitem', { name: 'Rank 0: done, straggler' })).toBeVisible();
  await expect(p.getByRole('listitem', { name: /straggler/ })).toHaveCount(1);
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
  await expectDrawn(plot, 3); // total + 2 ranks
  const total = 'total (mean rank × 2 data-parallel)';
  // plotly's graph div holds one trace per rank (and the total).
  const samples = await expectTraces(plot, [total, 'rank 0 (straggler)', 'rank 1']);
  await expectDrawn(p.getByLabel('loss plot'), 2);
  // Rank 0 has one colour: in the samples/s plot and the loss plot (its tile: palette.test.ts).
  const loss = await tracesOf(p.getByLabel('loss plot'));
  expect(loss.find(t => t.name === 'rank 0 (straggler)')?.color).toBe(samples[1]?.color);
  // Hovering the plot shows plotly's unified hover, naming the ranks and their values.
  const area = graphOf(plot).locator('.nsewdrag').first();
  await area.hover();
  await expect(graphOf(plot).locator('.hoverlayer')).toContainText(/rank 0.*\d/s);
  // The legend toggles a rank off.
  await graphOf(plot).locator('.legend .traces').nth(1).click();
  await expect.poll(async () => (await tracesOf(plot))[1]?.visible).toBe('legendonly');
  // The modebar's PNG export downloads a file.
  const download = page.waitForEvent('download');
  await area.hover();
  await graphOf(plot).locator('.modebar-btn[data-title^="Download plot"]').click();
  expect((await download).suggestedFilename()).toMatch(/\.png$/);
  // The stacked plots of the run share their x range: a zoom of samples/s zooms the loss plot,
  // a double-click resets both.
  const xRange = (figure: Locator): Promise<number[]> =>
    graphOf(figure).evaluate(
      node => (node as unknown as { layout: { xaxis: { range: number[] } } }).layout.xaxis.range
    );
  const lossPlot = p.getByLabel('loss plot');
  const unzoomed = await xRange(plot);
  expect(await xRange(lossPlot)).toEqual(unzoomed);
  const box = await area.boundingBox();
  expect(box).not.toBeNull();
  if (box) {
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
  }
  await expect.poll(() => xRange(plot)).not.toEqual(unzoomed);
  const zoomed = await xRange(plot);
  await expect.poll(() => xRange(lossPlot)).toEqual(zoomed);
  await area.dblclick();
  await expect.poll(() => xRange(lossPlot)).toEqual(unzoomed);
  // A metric named like HTML is shown as typed in its plot's title.
  const lr = p.getByLabel('<i>lr</i> plot');
  await expectDrawn(lr, 2);
  await expect(lr.locator('figcaption')).toHaveText('<i>lr</i>');
  await expect(lr.locator('i')).toHaveCount(0);
  await shoot(page, '4-throughput');

  // The Scaling tab draws plotly figures too (samples/s against world size, this one run);
  // plotly.js is one chunk of its own, loaded when a figure is first shown, never with the entry.
  await p.getByRole('tab', { name: 'Scaling' }).click();
  await expectDrawn(p.getByRole('figure', { name: 'samples/s against world size' }), 2); // measured, ideal
  const scripts = await extensionScripts(page);
  expect(scripts.length).toBeGreaterThan(0);
  const chunks = await extensionChunks(page);
  expect(chunks.length).toBeGreaterThan(1); // the entry and the chunks its loader names
  const plotly = chunks.filter(chunk => chunk.plotly);
  expect(plotly).toHaveLength(1);
  for (const chunk of chunks.filter(c => !c.plotly)) {
    expect(chunk.size, chunk.name).toBeLessThan(200_000);
  }
  await p.getByRole('tab', { name: 'Throughput' }).click();

  // Saved, so that the reloaded notebook starts its kernel without asking.
  await page.evaluate(() =>
    (
      window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
    ).jupyterapp.commands.execute('docmanager:save')
  );
  // JupyterLab writes its state database to the workspace a moment after the last change
  // (debounced); reload once the workspace holds the panel's state, as a user's later visit would.
  await expect
    .poll(
      () =>
        page.evaluate(async () => {
          const reply = await fetch('/lab/api/workspaces/default');
          const workspace = (await reply.json()) as { data?: Record<string, { tab?: string }> };
          return workspace.data?.['jupyter-distributed:panel']?.tab ?? null;
        }),
      { timeout: 15_000 }
    )
    .toBe('throughput');
  await page.reload({ waitForIsReady: false });
  await page.waitForSelector('#jupyterlab-splash', { state: 'detached' });
  const q = (await panel(page).isVisible()) ? panel(page) : await openPanel(page);
  // Same tab, same run, its plot again.
  await expect(q.getByRole('tab', { name: 'Throughput', selected: true })).toBeVisible();
  await expect(q.getByLabel('Run state')).toHaveText('completed');
  await expectDrawn(q.getByLabel('samples/s plot'), 3);
  await q.getByRole('tab', { name: 'Runs' }).click();
  await expect(q.getByRole('option', { selected: true })).toHaveAttribute('aria-label', runLabel ?? '');
  await shoot(page, '5-after-reload');

  // The dark theme: the plots take their colours from the theme's variables.
  await q.getByRole('tab', { name: 'Throughput' }).click();
  await page.theme.setDarkTheme();
  const expected = await cssColor(page, 'var(--jp-ui-font-color1)');
  expect(expected).not.toBe('rgb(0, 0, 0)'); // the light theme's text colour
  const dark = q.getByLabel('samples/s plot');
  // The figure is drawn again with the theme's text colour (its axes' labels), and the HTML
  // title follows the theme too.
  await expect
    .poll(
      async () =>
        cssColor(
          page,
          await graphOf(dark).evaluate(
            node => (node as unknown as { layout?: { font?: { color?: string } } }).layout?.font?.color ?? ''
          )
        ),
      { timeout: 10_000 }
    )
    .toBe(expected);
  expect(await dark.locator('figcaption').evaluate(node => getComputedStyle(node).color)).toBe(expected);
  await expectDrawn(dark, 3);
  await shoot(page, '6-dark-theme');
});
