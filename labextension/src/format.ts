/**
 * Pure text formatting for the panel's views: no DOM, no I/O.
 */

import { nullTranslator, type TranslationBundle } from '@jupyterlab/translation';

import type { StacksEvent } from './wire';

/**
 * The panel's headline for a history of `count` runs.
 */
export function formatRunCount(
  count: number,
  trans: TranslationBundle = nullTranslator.load('jupyter_distributed')
): string {
  if (!Number.isInteger(count) || count < 0) {
    throw new RangeError(`run count must be a non-negative integer, got ${count}`);
  }
  if (count === 0) {
    return trans.__('No runs yet');
  }
  return trans._n('%1 run', '%1 runs', count);
}

/**
 * The title of a stack snapshot: which ranks it holds (all of them, or the one a rank
 * tile asked for) and why it was taken.
 */
export function stacksTitle(
  stacks: StacksEvent,
  trans: TranslationBundle = nullTranslator.load('jupyter_distributed')
): string {
  const ranks = Object.keys(stacks.ranks)
    .map(Number)
    .filter(Number.isInteger)
    .sort((a, b) => a - b);
  if (!ranks.length) {
    return trans.__('Stacks (%1)', stacks.reason);
  }
  return trans._n('Stacks of rank %2 (%3)', 'Stacks of ranks %2 (%3)', ranks.length, ranks.join(', '), stacks.reason);
}

/** Ranks as a reader names them: "rank 3", "ranks 0-3", "ranks 0-2, 5". */
export function formatRanks(
  ranks: readonly number[],
  trans: TranslationBundle = nullTranslator.load('jupyter_distributed')
): string {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const spans: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && (sorted[j + 1] as number) === (sorted[j] as number) + 1) {
      j++;
    }
    spans.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j + 1;
  }
  return trans._n('rank %2', 'ranks %2', sorted.length, spans.join(', '));
}
