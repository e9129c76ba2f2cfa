import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { runKind, runningProbe, sourceLine } from '../../labextension/src/runkind';
import { RunsList } from '../../labextension/src/runsview';
import { ScalingView } from '../../labextension/src/scalingview';
import { makeRun } from './fakes';

const PROBE = '# %distributed probe: links between the ranks\nfrom x import y\n';

describe('a run’s label', () => {
  it('is the first line of its cell, with a kind badge', () => {
    const runs = [
      makeRun('t', 1, { source: '\nfor i in range(9):\n    report(samples=32)', summary: { throughput: 640 } }),
      makeRun('p', 2, { source: PROBE, state: 'completed' }),
      makeRun('s', 3, { sweep_id: 'sw1' }),
      makeRun('f', 4, { state: 'failed', summary: { throughput: 5 } }),
      makeRun('c', 5, { source: 'print(rank)' })
    ];
    expect(runs.map(runKind)).toEqual(['training', 'probe', 'sweep', 'failed', null]);
    expect(sourceLine(runs[0] ?? makeRun('none', 0))).toBe('for i in range(9):');
    const html = renderToStaticMarkup(
      createElement(RunsList, { runs, loaded: true, selectedId: null, onSelect: () => undefined })
    );
    expect(html).toContain('>training</span>for i in range(9):');
    expect(html).toContain('>probe</span># %distributed probe: links between the ranks');
    expect(html).toContain('print(rank)');
    expect(html.match(/jp-Distributed-badge/g)?.length).toBe(4); // a plain cell has none
  });

  it('cuts a long first line', () => {
    expect(sourceLine(makeRun('x', 1, { source: 'y'.repeat(100) }), 10)).toBe(`${'y'.repeat(9)}…`);
  });
});

describe('the Scaling tab while a probe runs', () => {
  it('says probing…, never no data, while a probe of the selected cluster is listed as running', () => {
    const run = makeRun('cell', 1, { state: 'completed', cluster_id: 'c1' });
    const probe = makeRun('pr', 2, { source: PROBE, state: 'running', cluster_id: 'c1' });
    expect(runningProbe([run, probe], run)).toBe(probe);
    const html = renderToStaticMarkup(createElement(ScalingView, { runs: [run, probe], run, probe: null }));
    expect(html).toContain('probing…');
    expect(html).not.toContain('No scaling data');
    const after = renderToStaticMarkup(
      createElement(ScalingView, { runs: [run, { ...probe, state: 'completed' as const }], run, probe: null })
    );
    expect(after).toContain('No scaling data');
  });

  it('says probing… from the moment the panel’s Probe is pressed', () => {
    const run = makeRun('cell', 1, { state: 'completed' });
    const html = renderToStaticMarkup(createElement(ScalingView, { runs: [run], run, probe: null, probing: true }));
    expect(html).toContain('probing…');
  });
});
