/**
 * Render-only: the runs list and the selected run's header with its actions.
 */

import * as React from 'react';

import { formatRunCount } from './format';
import type { Run } from './tokens';

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
  return `${run.backend} × ${run.world_size}${where ? ` · ${where}` : ''}`;
}

export function RunsList(props: {
  runs: readonly Run[];
  selectedId: string | null;
  onSelect: (id: string) => void;
}): JSX.Element {
  if (!props.runs.length) {
    return <p className="jp-Distributed-empty">{formatRunCount(0)}</p>;
  }
  return (
    <ul className="jp-Distributed-runs" role="listbox" aria-label="Runs">
      {props.runs.map(run => (
        <li
          key={run.id}
          role="option"
          aria-selected={run.id === props.selectedId}
          aria-label={`Run ${run.id}`}
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
          <span className="jp-Distributed-runTime">
            {formatTime(run.started)}
            {run.ended !== null ? ` · ${formatDuration(run.ended - run.started)}` : ''}
          </span>
        </li>
      ))}
    </ul>
  );
}

export function RunHeader(props: {
  run: Run;
  onCancel: () => void;
  onStop: () => void;
}): JSX.Element {
  const { run } = props;
  const active = run.state === 'running' || run.state === 'pending';
  return (
    <div className="jp-Distributed-header" aria-label="Selected run">
      <span className="jp-Distributed-runTitle">{runTitle(run)}</span>
      <span className={`jp-Distributed-state jp-mod-${run.state}`} aria-label="Run state">
        {run.state}
      </span>
      {run.message ? <span className="jp-Distributed-message">{run.message}</span> : null}
      <span className="jp-Distributed-actions">
        <button className="jp-Button" disabled={!active} onClick={props.onCancel}>
          Cancel run
        </button>
        <button className="jp-Button" disabled={!run.cluster_id} onClick={props.onStop}>
          Stop cluster
        </button>
      </span>
    </div>
  );
}
