/**
 * Render-only: the Logs tab's toolbar (text search, ranks to show, stderr only,
 * identical lines of several ranks collapsed or not, pause/resume of
 * auto-scroll, line count).
 */

import * as React from 'react';

import type { ILogFilter } from './logbuffer';
import { useTrans } from './translate';

/** "0,2-4" → [0, 2, 3, 4]; null when the text is not such a list. */
export function parseRanks(text: string): number[] | null {
  const ranks: number[] = [];
  for (const part of text
    .split(',')
    .map(p => p.trim())
    .filter(Boolean)) {
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (!m) {
      return null;
    }
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let r = from; r <= to && ranks.length < 100_000; r++) {
      ranks.push(r);
    }
  }
  return ranks;
}

export interface ILogToolbarProps {
  filter: ILogFilter;
  follow: boolean;
  collapsed: boolean;
  onCollapse: (collapsed: boolean) => void;
  /** Lines that pass the filter. */
  total: number;
  onFilter: (filter: Partial<ILogFilter>) => void;
  onFollow: (follow: boolean) => void;
}

export function LogToolbar(props: ILogToolbarProps): JSX.Element {
  const trans = useTrans();
  // The text as typed; the filter changes only when it parses.
  const [ranksText, setRanksText] = React.useState(props.filter.ranks.join(','));
  const ranksValid = parseRanks(ranksText) !== null;
  return (
    <div className="jp-Distributed-toolbar" role="toolbar" aria-label={trans.__('Log filters')}>
      <input
        type="search"
        aria-label={trans.__('Search logs')}
        placeholder={trans.__('Search')}
        value={props.filter.search}
        onChange={e => props.onFilter({ search: e.target.value })}
      />
      <input
        type="text"
        aria-label={trans.__('Ranks to show')}
        aria-invalid={!ranksValid}
        placeholder={trans.__('Ranks: all (e.g. 0,2-3)')}
        value={ranksText}
        onChange={e => {
          setRanksText(e.target.value);
          const ranks = parseRanks(e.target.value);
          if (ranks !== null) {
            props.onFilter({ ranks });
          }
        }}
      />
      <label>
        <input
          type="checkbox"
          checked={props.filter.stderrOnly}
          onChange={e => props.onFilter({ stderrOnly: e.target.checked })}
        />
        {trans.__('stderr only')}
      </label>
      <label title={trans.__('Identical lines of several ranks once, as [ranks 0-7]')}>
        <input type="checkbox" checked={props.collapsed} onChange={e => props.onCollapse(e.target.checked)} />
        {trans.__('Collapse identical lines')}
      </label>
      <button type="button" className="jp-Button" onClick={() => props.onFollow(!props.follow)}>
        {props.follow ? trans.__('Pause auto-scroll') : trans.__('Resume auto-scroll')}
      </button>
      <span className="jp-Distributed-count" role="status" aria-label={trans.__('Line count')}>
        {trans._n('%1 line', '%1 lines', props.total)}
      </span>
    </div>
  );
}
