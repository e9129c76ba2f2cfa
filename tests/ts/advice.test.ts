import type { JSONObject } from '@lumino/coreutils';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { adviceFor, adviceOf, cellText } from '../../labextension/src/advice';
import { AdviceCells, type CellOwner, type INotebookCells } from '../../labextension/src/advicecells';
import { runKind } from '../../labextension/src/runkind';
import { RunsList } from '../../labextension/src/runsview';
import { compareRows } from '../../labextension/src/scaling';
import { ScalingView } from '../../labextension/src/scalingview';
import { makeRun } from './fakes';

/** A layout as `advise/enumerate.Row.to_json` stores it. */
function layout(launch: string, extra: JSONObject = {}): JSONObject {
  return {
    layout: launch.includes('fsdp') ? 'fsdp dp2' : 'ddp dp2',
    launch,
    strategy: 'ddp',
    dp: 2,
    pp: 1,
    microbatches: 1,
    micro_batch: 4,
    predicted_gib: 0.00268,
    predicted_bytes: { params: 400000 },
    predicted_step_s: 0.0178,
    predicted_parts_s: { compute: 0.0178 },
    predicted_samples_per_s: 449.95,
    dominant: 'compute 100 %',
    fits: true,
    measured: null,
    calibrated: '',
    pareto: true,
    megatron: 'agrees',
    ...extra
  };
}

const DDP = '%%distributed -n 2 --strategy ddp';
const FSDP = '%%distributed -n 2 --strategy fsdp';

/** A run of `%distributed advise` as `advise/store.save` stores it. */
function adviceRun(id: string, started: number, layouts: JSONObject[], extra: Parameters<typeof makeRun>[2] = {}) {
  return makeRun(id, started, {
    state: 'completed',
    ranks: [],
    cluster_id: '',
    source: '%distributed advise --global-batch 8 -n 2',
    summary: {
      kind: 'advice',
      advice: {
        inputs: { model: 'build', traced: true, global_batch: 8, nodes: 1, procs_per_node: 2, calibration: null },
        notes: ['every number is predicted unless labelled measured'],
        seconds: 1.5,
        layouts
      }
    },
    ...extra
  });
}

/** A cell's run on a 1 × 2 cluster (its stored spec). */
function cellRun(id: string, extra: Parameters<typeof makeRun>[2] = {}) {
  return makeRun(id, 10, { spec: { layout: { nodes: 1, procs_per_node: 2 } }, summary: { throughput: 100 }, ...extra });
}

describe('an advice run', () => {
  it('is its own kind, never a training run', () => {
    const run = adviceRun('a', 1, [layout(DDP)]);
    expect(runKind(run)).toBe('advice');
    expect(compareRows([run], run)).toEqual([]);
    const html = renderToStaticMarkup(
      createElement(RunsList, { runs: [run], loaded: true, selectedId: null, onSelect: () => undefined })
    );
    expect(html).toContain('jp-mod-advice">advice</span>%distributed advise --global-batch 8 -n 2');
  });

  it('gives its layouts, best first, predicted and measured apart', () => {
    const measured = { gib: 0.003, step_s: 0.02, samples_per_s: 400, blame: 'compute' };
    const advice = adviceOf(adviceRun('a', 1, [layout(DDP, { measured }), layout(FSDP, { fits: false })]));
    expect(advice?.rows.map(r => [r.launch, r.fits, r.measured])).toEqual([
      [DDP, true, { gib: 0.003, stepS: 0.02, samplesPerS: 400, blame: 'compute' }],
      [FSDP, false, null]
    ]);
    expect(advice && [advice.model, advice.nodes, advice.procsPerNode, advice.traced]).toEqual(['build', 1, 2, true]);
    expect(adviceOf(cellRun('c'))).toBeNull();
  });
});

describe('the advice of the selected cluster', () => {
  const byId = adviceRun('old', 1, [layout(DDP)], { cluster_id: 'c1' });
  const newer = adviceRun('new', 2, [layout(FSDP)], { cluster_id: 'c1' });
  const other = adviceRun('other', 3, [layout(DDP)], { cluster_id: 'c2' });
  const byShape = adviceRun('shape', 4, [layout(DDP)]);

  it('is the newest advice asked with --cluster of its cluster', () => {
    const run = cellRun('r', { cluster_id: 'c1', host: 'elsewhere' });
    expect(adviceFor([other, byId, newer, byShape], run)?.run.id).toBe('new');
  });

  it('else the newest asked for its nodes × processes per node on its host', () => {
    expect(adviceFor([byId, byShape, other], cellRun('r', { cluster_id: 'c9' }))?.run.id).toBe('shape');
    expect(adviceFor([byShape], cellRun('r', { host: 'elsewhere' }))).toBeNull();
    const four = cellRun('r', { spec: { layout: { nodes: 1, procs_per_node: 4 } } });
    expect(adviceFor([byShape], four)).toBeNull();
  });

  it('is the advice itself when an advice run is selected', () => {
    expect(adviceFor([newer, byId], byId)?.run.id).toBe('old');
  });
});

describe('the Scaling tab’s advice', () => {
  it('shows each layout with its launch line, predicted figures and a New cell button', () => {
    const run = adviceRun('a', 1, [layout(DDP), layout(FSDP)]);
    const html = renderToStaticMarkup(
      createElement(ScalingView, { runs: [run], run, probe: null, onNewCell: () => undefined })
    );
    expect(html).toContain('aria-label="Advice"');
    expect(html).toContain(`<code>${DDP}</code>`);
    expect(html).toContain('<th colSpan="4">predicted</th>');
    expect(html).toContain('<td>0.00268</td><td>0.0178</td><td>449.9</td><td>compute 100 %</td>');
    expect(html).not.toContain('measured:'); // nothing verified
    expect(html.match(/>New cell</g)?.length).toBe(2);
    expect(html).not.toContain('No scaling data');
  });

  it('adds what was measured once verified, and the component a wrong prediction blames', () => {
    const measured = { gib: 0.003, step_s: 0.02, samples_per_s: 400, blame: 'compute (+12 %)' };
    const run = adviceRun('a', 1, [layout(DDP, { measured })]);
    const html = renderToStaticMarkup(createElement(ScalingView, { runs: [run], run, probe: null }));
    expect(html).toContain('measured: 0.0030 GiB/rank, 0.0200 s/step, 400.0 samples/s; off: compute (+12 %)');
    expect(html).not.toContain('New cell'); // no notebooks: no button
  });
});

class FakeCells implements INotebookCells {
  inserted: [CellOwner, string][] = [];
  answer: string | null = null;
  insertBelow(owner: CellOwner, text: string): string | null {
    this.inserted.push([owner, text]);
    return this.answer;
  }
}

describe('New cell', () => {
  it('puts the launch line into the notebook of the kernel that owns the cluster', () => {
    const cells = new FakeCells();
    let changed = 0;
    const action = new AdviceCells(cells, () => changed++);
    const advice = adviceOf(adviceRun('adv', 1, [layout(DDP)], { kernel_id: 'k-advice' }));
    const row = advice?.rows[0];
    if (!advice || !row) {
      throw new Error('no advice');
    }
    const selected = cellRun('r', { kernel_id: 'k-cluster', notebook: 'train.ipynb' });
    action.insert(selected, advice, row);
    expect(cells.inserted[0]?.[0]).toBe(selected);
    const text = cells.inserted[0]?.[1] ?? '';
    expect(text.split('\n')[0]).toBe(DDP);
    expect(text).toBe(cellText(advice, row));
    expect(text).toContain('# advice adv: ddp dp2, predicted 0.00268 GiB/rank, 0.0178 s/step, 450 samples/s');
    // The advice itself selected: its own kernel's notebook; an error is kept as one line.
    cells.answer = 'the notebook is not open';
    action.insert(advice.run, advice, row);
    expect(cells.inserted[1]?.[0]).toBe(advice.run);
    expect([action.error, changed]).toEqual(['the notebook is not open', 2]);
  });
});
