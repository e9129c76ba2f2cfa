/**
 * The pairs of the selected run's probe, for the Scaling tab's heatmap. The
 * runs list, polled every refresh, leaves a probe's pairs out (one per pair of
 * ranks: megabytes at 256 ranks); `GET runs/<id>` has them. They are taken from
 * the selected run's snapshot (also `GET runs/<id>`, read on each selection)
 * when it has them, else fetched once per probe and kept: fetched again only
 * when the listed probe changes, never on a poll. No DOM.
 */

import { probeOf } from './scaling';
import type { ProbePair, ProbeSummary, Run, RunReply } from './wire';

/** What the Scaling tab shows of a run's probe. */
export interface IProbeView {
  /** The probe as the run has it (in the runs list: without its pairs). */
  probe: ProbeSummary;
  /** Tells this probe from another: the heatmap is drawn again when it changes. */
  key: string;
  /** Every pair; null while they are fetched, or when that failed. */
  pairs: readonly ProbePair[] | null;
  /** Why the pairs could not be fetched, one line; '' otherwise. */
  error: string;
}

/** What tells one probe of a run from the next; the same for the listed and the whole run. */
export function probeKey(runId: string, probe: ProbeSummary): string {
  return [runId, probe.run_id, probe.seconds, probe.pairs?.length ?? probe.pair_count].join(' ');
}

export class ProbePairs {
  /** `fetch` is `GET runs/<id>`; `changed` is called when a fetch has answered. */
  constructor(
    private readonly _fetch: (id: string) => Promise<RunReply>,
    private readonly _changed: () => void
  ) {}

  /** What the Scaling tab shows of `run`'s probe; null when `run` is no probe's run. */
  view(run: Run): IProbeView | null {
    const probe = probeOf(run);
    if (!probe) {
      return null;
    }
    const key = probeKey(run.id, probe);
    if (probe.pairs) {
      return { probe, key, pairs: probe.pairs, error: '' };
    }
    const kept = key === this._key;
    return { probe, key, pairs: kept ? this._pairs : null, error: kept ? this._error : '' };
  }

  /** Keep the pairs of a run fetched anyway (the selected run's snapshot), so they are not fetched again. */
  offer(run: Run): void {
    const probe = probeOf(run);
    if (probe?.pairs) {
      this._key = probeKey(run.id, probe);
      this._pairs = probe.pairs;
      this._error = '';
      this._pending = false;
    }
  }

  /**
   * Fetch the pairs of the selected run as listed (null: none selected) when
   * its probe has none: once per probe, not while kept, under way or failed.
   */
  follow(run: Run | null): void {
    const probe = run ? probeOf(run) : null;
    if (!run || !probe || probe.pairs) {
      return;
    }
    const key = probeKey(run.id, probe);
    if (key === this._key) {
      return;
    }
    this._key = key;
    this._pairs = null;
    this._error = '';
    this._pending = true;
    void this._load(run.id, key);
  }

  private async _load(id: string, key: string): Promise<void> {
    let pairs: readonly ProbePair[] | null = null;
    let error = '';
    try {
      const reply = await this._fetch(id);
      pairs = probeOf(reply.run)?.pairs ?? null;
      error = pairs ? '' : `run ${id} has no probe pairs`;
    } catch (e) {
      error = (e as Error).message;
    }
    if (key === this._key && this._pending) {
      this._pairs = pairs;
      this._error = error;
      this._pending = false;
      this._changed();
    }
  }

  /** The probe whose pairs are kept, under way or failed. */
  private _key: string | null = null;
  private _pairs: readonly ProbePair[] | null = null;
  private _error = '';
  private _pending = false;
}
