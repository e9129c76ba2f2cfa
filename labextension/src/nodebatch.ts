/**
 * Rows batched per node in the live stream (`stream?format=nodes`,
 * `server/nodebatch.py`): a node's lines, metric samples or rank states of
 * one delta as columns. Here: a batch cut to the events after a sequence
 * number (a reconnect may bring some again), and its lines.
 */

import type { LogLine, NodeBatch, OutputBatch, StreamItem } from './wire';

/** An event sent alone, or a node's batch. */
export type StreamPart = StreamItem | NodeBatch;

/** Whether a part is one event (else a node's batch). */
export function isItem(part: StreamPart): part is StreamItem {
  return 'event' in part;
}

/** The last sequence number a part holds. */
export function lastSeqOf(part: StreamPart): number {
  return isItem(part) ? part.seq : (part.seq[part.seq.length - 1] ?? -1);
}

/** The batch without its events up to `after` (its columns cut alike); null if none is left. */
export function batchSince<B extends NodeBatch>(batch: B, after: number): B | null {
  const seqs = batch.seq;
  if (!seqs.length || (seqs[seqs.length - 1] as number) <= after) {
    return null;
  }
  if ((seqs[0] as number) > after) {
    return batch;
  }
  let i = 0;
  while ((seqs[i] as number) <= after) {
    i++;
  }
  const cut = { ...batch, seq: seqs.slice(i), rank: batch.rank.slice(i), t: batch.t.slice(i) };
  switch (cut.kind) {
    case 'output':
      return { ...cut, text: cut.text.slice(i) } as B;
    case 'metric':
      return {
        ...cut,
        values: Object.fromEntries(Object.entries(cut.values).map(([k, v]) => [k, v.slice(i)]))
      } as B;
    case 'rank':
      return { ...cut, state: cut.state.slice(i), pid: cut.pid.slice(i) } as B;
  }
}

/** A node's lines as log lines, appended to `lines`. */
export function batchLines(batch: OutputBatch, lines: LogLine[]): void {
  const { seq, rank, t, text, stream } = batch;
  for (let i = 0; i < seq.length; i++) {
    lines.push({ seq: seq[i] as number, rank: rank[i] as number, t: t[i] as number, stream, text: text[i] ?? '' });
  }
}

/** Lines of several batches, in `seq` order (sorted only when they are not already). */
export function inSeqOrder(lines: LogLine[]): LogLine[] {
  for (let i = 1; i < lines.length; i++) {
    if ((lines[i] as LogLine).seq < (lines[i - 1] as LogLine).seq) {
      return lines.sort((a, b) => a.seq - b.seq);
    }
  }
  return lines;
}
