/**
 * Render-only: the runs list and the selected run's header with its actions.
 */

import * as React from 'react';

import type { ActionKind } from './actions';
import { formatRunCount, stacksTitle } from './format';
import { runKind, sourceLine } from './runkind';
import { useTrans } from './translate';
import { isRunActive, type Run, type StacksEvent } from './wire';

export function formatTime(t: number): string {
  return new Date(t * 1000).toLocaleString();
}

export function formatDuration(seconds: number): string {
  if (seconds < 60) {
    return `${seconds.toFixed(1)} s`;
  }
  const m = Math.floor(seconds / 60);
  return m < 60 ? `${m} min ${Math.round(seconds % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

function runTitle(run: Run): string {
  const where = run.notebook ? run.notebook.split('/').pop() : run.host;
  // A run of an older inline widget has no backend name: just the world size then.
  const what = run.backend ? `${run.backend} × ${run.world_size}` : `× ${run.world_size}`;
  return `${what}${where ? ` · ${where}` : ''}`;
}

/** The first line of the run's cell and its kind's badge (`runkind.ts`). */
function RunLabel(props: { run: Run }): JSX.Element {
  const trans = useTrans();
  const kind = runKind(props.run);
  const names = {
    advice: trans.__('advice'),
    probe: trans.__('probe'),
    sweep: trans.__('sweep'),
    failed: trans.__('failed'),
    training: trans.__('training')
  };
  return (
    <span className="jp-Distributed-runSource" title={props.run.source}>
      {kind ? <span className={`jp-Distributed-badge jp-mod-${kind}`}>{names[kind]}</span> : null}
      {sourceLine(props.run)}
    </span>
  );
}

export function RunsList(props: {
  runs: readonly Run[];
  /** Whether the list has been read from the server once: before that, "no runs" is not known. */
  loaded: boolean;
  selectedId: string | null;
  onSelect: (id: string) => void;
}): JSX.Element {
  const trans = useTrans();
  if (!props.runs.length) {
    return (
      <p className="jp-Distributed-empty">{props.loaded ? formatRunCount(0, trans) : trans.__('Loading runs…')}</p>
    );
  }
  return (
    <div className="jp-Distributed-runs" role="listbox" aria-label={trans.__('Runs')}>
      {props.runs.map(run => (
        <div
          key={run.id}
          role="option"
          aria-selected={run.id === props.selectedId}
          aria-label={trans.__('Run %1', run.id)}
          tabIndex={0}
          className={`jp-Distributed-run jp-mod-${run.state}`}
          onClick={() => props.onSelect(run.id)}
          onKeyDown={e => {
            if (e.key === 'Enter' || e.key === ' ') {
              props.onSelect(run.id);
            }
          }}
        >
          <span className="jp-Distributed-runTitle">{runTitle(run)}</span>
          <span className={`jp-Distributed-state jp-mod-${run.state}`}>{run.state}</span>
          <RunLabel run={run} />
          <span className="jp-Distributed-runTime">
            {formatTime(run.started)}
            {run.ended !== null ? ` · ${formatDuration(run.ended - run.started)}` : ''}
          </span>
        </div>
      ))}
    </div>
  );
}

/** The latest stacks of a run: the diagnosis (root cause first) and each group's stack, as text. */
export function StacksView(props: { stacks: StacksEvent }): JSX.Element {
  const trans = useTrans();
  const { stacks } = props;
  return (
    <details className="jp-Distributed-stacks" open>
      <summary>{stacksTitle(stacks, trans)}</summary>
      <pre role="log" aria-label={trans.__('Stacks of the ranks')}>
        {stacks.diagnosis}
      </pre>
    </details>
  );
}

/** The run's title, state and message, with Cancel / Stop buttons where the actions are given
 * (and `children`, more actions, before Stop). */
export function RunHeader(props: {
  run: Run;
  /** The title shown (none: the run's backend, size and notebook). */
  title?: string;
  onCancel?: () => void;
  onStop?: () => void;
  onStacks?: () => void;
  onDelete?: () => void;
  /** Whether an action is under way (its button is busy until it is done). */
  busy?: (kind: ActionKind) => boolean;
  children?: React.ReactNode;
}): JSX.Element {
  const { run } = props;
  const trans = useTrans();
  const active = isRunActive(run.state);
  const busy = (kind: ActionKind): boolean => props.busy?.(kind) ?? false;
  return (
    <div className="jp-Distributed-header" role="group" aria-label={trans.__('Selected run')}>
      <span className="jp-Distributed-runTitle">{props.title ?? runTitle(run)}</span>
      <span className={`jp-Distributed-state jp-mod-${run.state}`} role="status" aria-label={trans.__('Run state')}>
        {run.state}
      </span>
      {run.message ? <span className="jp-Distributed-message">{run.message}</span> : null}
      {props.onCancel && props.onStop ? (
        <span className="jp-Distributed-actions">
          <button
            type="button"
            className="jp-Button"
            disabled={!active || busy('cancel')}
            aria-busy={busy('cancel')}
            onClick={props.onCancel}
          >
            {busy('cancel') ? trans.__('Cancelling…') : trans.__('Cancel run')}
          </button>
          {props.onStacks ? (
            <button
              type="button"
              className="jp-Button"
              disabled={run.state !== 'running' || busy('stacks')}
              aria-busy={busy('stacks')}
              title={trans.__('Where every rank is now: the stack of each thread')}
              onClick={props.onStacks}
            >
              {busy('stacks') ? trans.__('Stacks…') : trans.__('Stacks')}
            </button>
          ) : null}
          {props.children}
          <button
            type="button"
            className="jp-Button"
            disabled={!run.cluster_id || busy('stop')}
            aria-busy={busy('stop')}
            onClick={props.onStop}
          >
            {busy('stop') ? trans.__('Stopping…') : trans.__('Stop cluster')}
          </button>
          {props.onDelete ? (
            <button
              type="button"
              className="jp-Button"
              disabled={active || busy('delete')}
              aria-busy={busy('delete')}
              title={
                active
                  ? trans.__('A running run cannot be deleted: cancel it first')
                  : trans.__('Delete this run and all it holds (logs, metrics, stacks) from the history')
              }
              onClick={props.onDelete}
            >
              {busy('delete') ? trans.__('Deleting…') : trans.__('Delete')}
            </button>
          ) : null}
        </span>
      ) : null}
    </div>
  );
}
