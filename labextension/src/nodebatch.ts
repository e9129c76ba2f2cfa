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

/**
 * Lines of several batches, in `seq` order: as they are when they are already; else, when
 * their seqs lie close together (a delta's do), each put in its seq's slot, else sorted.
 */
export function inSeqOrder(lines: LogLine[]): LogLine[] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  let ordered = true;
  let last = Number.NEGATIVE_INFINITY;
  for (const { seq } of lines) {
    ordered &&= seq >= last;
    last = seq;
    lo = Math.min(lo, seq);
    hi = Math.max(hi, seq);
  }
  if (ordered) {
    return lines;
  }
  if (hi - lo > 4 * lines.length + 64) {
    return lines.sort((a, b) => a.seq - b.seq);
  }
  // Each seq once, except an error's lines, which share their event's seq: those keep their order.
  const slots: (LogLine | LogLine[] | undefined)[] = new Array(hi - lo + 1);
  for (const line of lines) {
    const i = line.seq - lo;
    const held = slots[i];
    slots[i] = held === undefined ? line : Array.isArray(held) ? [...held, line] : [held, line];
  }
  const out: LogLine[] = [];
  for (const slot of slots) {
    if (slot !== undefined) {
      if (Array.isArray(slot)) {
        out.push(...slot);
      } else {
        out.push(slot);
      }
    }
  }
  return out;
}
