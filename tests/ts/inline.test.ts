import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { InlineRun, inlineTitle, liveFrom } from '../../labextension/src/inline';
import type { RankInfo } from '../../labextension/src/wire';
import { makeRun } from './fakes';

const T = 1_000_000;
const SOURCE = '%%distributed --widget -n 2\n\nfor step in range(20):\n    report(progress=step / 20)\n';

function rank(r: number): RankInfo {
  return { rank: r, host: 'h', pid: 10 + r, state: 'running', coords: {}, updated: T, heartbeat: T };
}

function inline(): string {
  const run = makeRun('w1', T, { source: SOURCE, notebook: '', cluster_id: '' });
  const live = liveFrom(
    run,
    [rank(0), rank(1)],
    [{ seq: 1, event: { kind: 'metric', run_id: 'w1', rank: 0, t: T + 1, values: { progress: 0.45 } } }]
  );
  return renderToStaticMarkup(createElement(InlineRun, { live, now: T + 1 }));
}

describe('the inline widget', () => {
  it('is titled with the backend, the ranks and the first line of the cell', () => {
    expect(inline()).toContain('<span class="jp-Distributed-runTitle">local · 2 ranks · for step in range(20):</span>');
    expect(inlineTitle(makeRun('r', T, { backend: '', world_size: 1, source: '' }))).toBe('1 rank');
  });

  it('keeps a rank’s progress and its % on one line', () => {
    expect(inline()).toContain('45\u00a0%');
    expect(inline()).not.toContain('45 %');
  });
});
