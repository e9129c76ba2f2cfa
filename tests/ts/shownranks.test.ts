/**
 * Any rank can be shown in the many-rank view (`shownranks.ts`): a tile's Plot button in the
 * Ranks tab, or the Throughput tab's rank picker, adds that rank's own line to the figures,
 * next to the total, the band and the stragglers; its chip's × or Clear removes it.
 */

import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { ranksData } from '../../labextension/src/nodesummary';
import { metricTraces, samplesTraces } from '../../labextension/src/plotdata';
import { ThroughputView } from '../../labextension/src/plotsview';
import { RanksView } from '../../labextension/src/ranksview';
import { MAX_SHOWN, ShownRanks } from '../../labextension/src/shownranks';
import { liveOf } from './fakes';

const T = 2_000_000;

const names = (traces: { name: string }[]): string[] => traces.map(t => t.name);

describe('the ranks shown as their own lines', () => {
  it('adds a rank from a tile and removes it again, telling the panel each time', () => {
    let changes = 0;
    const shown = new ShownRanks(() => changes++);
    shown.toggle(17);
    shown.toggle(3);
    expect(shown.ranks).toEqual([3, 17]);
    expect(shown.has(17)).toBe(true);
    shown.toggle(17);
    expect(shown.ranks).toEqual([3]);
    expect(changes).toBe(3);
  });

  it('adds the ranks named in the picker, and clears them all', () => {
    const shown = new ShownRanks();
    expect(shown.add('5, 40-42 x')).toBe(4);
    expect(shown.add('5')).toBe(0);
    expect(shown.ranks).toEqual([5, 40, 41, 42]);
    shown.remove(41);
    expect(shown.key).toBe('5,40,42');
    shown.clear();
    expect(shown.ranks).toEqual([]);
  });

  it('holds at most MAX_SHOWN ranks, so that a figure stays a few traces', () => {
    const shown = new ShownRanks();
    shown.add(`0-${MAX_SHOWN + 10}`);
    expect(shown.ranks.length).toBe(MAX_SHOWN);
    shown.toggle(200);
    expect(shown.has(200)).toBe(false);
  });

  it('belongs to one run: selecting another empties it', () => {
    const shown = new ShownRanks();
    shown.forRun('a');
    shown.toggle(7);
    shown.forRun('a');
    expect(shown.ranks).toEqual([7]);
    shown.forRun('b');
    expect(shown.ranks).toEqual([]);
  });

  it('draws a shown rank in every plot of a 20-rank run, next to the total and the band', () => {
    const live = liveOf(20);
    const shown = new ShownRanks();
    const none = new Set<number>();
    expect(names(samplesTraces(live, T, 0, none, shown.set))).not.toContain('rank 13');
    shown.toggle(13);
    const samples = names(samplesTraces(live, T, 0, none, shown.set));
    expect(samples).toContain('rank 13');
    expect(samples).toContain('min – max rank');
    expect(samples.filter(n => n.startsWith('rank '))).toEqual(['rank 13']);
    expect(names(metricTraces(live, 'loss', T, 0, none, shown.set))).toContain('rank 13');
    shown.remove(13);
    expect(names(samplesTraces(live, T, 0, none, shown.set))).not.toContain('rank 13');
  });

  it('puts a Plot toggle on each tile of a many-rank run, pressed for the ranks shown', () => {
    const live = liveOf(20);
    const shown = new ShownRanks();
    shown.toggle(4);
    const html = renderToStaticMarkup(
      React.createElement(RanksView, {
        data: ranksData(live, T + 2, 0.8),
        plotted: shown.set,
        onPlot: (rank: number) => shown.toggle(rank)
      })
    );
    expect(html.match(/aria-label="Plot rank \d+"/g)?.length).toBe(20);
    expect(html).toMatch(/aria-pressed="true" aria-label="Plot rank 4"/);
    expect(html.match(/aria-pressed="true"/g)?.length).toBe(1);
    // A few ranks: every rank has its line already, no Plot buttons.
    const few = renderToStaticMarkup(React.createElement(RanksView, { data: ranksData(liveOf(4), T + 2, 0.8) }));
    expect(few).not.toContain('Plot rank');
  });

  it('shows a chip per shown rank in the Throughput tab, each with its remove button, and Clear', () => {
    const shown = new ShownRanks();
    shown.add('2, 19');
    const html = renderToStaticMarkup(
      React.createElement(ThroughputView, { live: liveOf(20), origin: T, window: 0, shownRanks: shown })
    );
    expect(html).toContain('aria-label="Stop showing rank 2"');
    expect(html).toContain('aria-label="Stop showing rank 19"');
    expect(html).toContain('>Clear</button>');
  });
});
