import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { rankRates } from '../../labextension/src/derive';
import { STRAGGLER_LINES, slowest } from '../../labextension/src/manyranks';
import { samplesTraces } from '../../labextension/src/plotdata';
import { ThroughputView } from '../../labextension/src/plotsview';
import { stragglers } from '../../labextension/src/rates';
import { RunLive } from '../../labextension/src/runstate';
import type { DistributedEvent } from '../../labextension/src/wire';

const T = 2_000_000;

/** 100 ranks reporting 32 samples every 0.25 s; ranks 10-29 slower, rank r every 0.5 + r/100 s. */
function manySlow(): RunLive {
  const live = new RunLive('r');
  const events: DistributedEvent[] = [];
  for (let rank = 0; rank < 100; rank++) {
    const step = rank >= 10 && rank < 30 ? 0.5 + rank / 100 : 0.25;
    for (let t = 0; t <= 8; t += step) {
      events.push({ kind: 'metric', run_id: 'r', rank, t: T + t, values: { samples: 32 } });
    }
  }
  events.sort((a, b) => a.t - b.t);
  live.apply(events.map((event, i) => ({ seq: i + 1, event })));
  return live;
}

describe('stragglers in a many-rank plot', () => {
  it(`draw the ${STRAGGLER_LINES} slowest as lines of their own, however many there are`, () => {
    const live = manySlow();
    const rates = rankRates(live);
    const slow = stragglers(rates, 0.8);
    expect(slow.size).toBe(20);
    const drawn = slowest(slow, rates);
    expect([...drawn].sort((a, b) => a - b)).toEqual([22, 23, 24, 25, 26, 27, 28, 29]);
    const names = samplesTraces(live, T, 0, drawn).map(t => t.name);
    expect(names.filter(n => n.endsWith('(straggler)'))).toHaveLength(STRAGGLER_LINES);
    expect(slowest(new Set([3, 1]), rates)).toEqual(new Set([3, 1])); // a few: all of them
  });

  it('say how many stragglers there are when not all are drawn', () => {
    const html = renderToStaticMarkup(React.createElement(ThroughputView, { live: manySlow(), origin: T, window: 0 }));
    expect(html).toContain(`20 stragglers: the ${STRAGGLER_LINES} slowest drawn as their own lines`);
  });
});
