/**
 * Render-only: the log lines of a run, virtualised (only the visible rows are
 * in the DOM), with a rank / stderr / text filter and pause/resume of
 * auto-scroll. Lines are React text nodes, never HTML.
 */

import * as React from 'react';

import type { ILogFilter } from './logbuffer';
import type { LogLine } from './tokens';

/** Height of one log row in px (fixed, so that rows can be placed without measuring). */
export const ROW_HEIGHT = 18;

/** Rows rendered above and below the visible ones. */
const OVERSCAN = 20;

/** "0,2-4" → [0, 2, 3, 4]; null when the text is not such a list. */
export function parseRanks(text: string): number[] | null {
  const ranks: number[] = [];
  for (const part of text.split(',').map(p => p.trim()).filter(Boolean)) {
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

export interface ILogsViewProps {
  lines: readonly LogLine[];
  /** Changes whenever `lines` grew (the array itself is reused). */
  version: number;
  filter: ILogFilter;
  follow: boolean;
  onFilter: (filter: Partial<ILogFilter>) => void;
  onFollow: (follow: boolean) => void;
}

export function LogsView(props: ILogsViewProps): JSX.Element {
  const scroller = React.useRef<HTMLDivElement>(null);
  // The scroll position seen last: moving up from it is the user's doing (following only
  // ever moves down; a shorter, filtered list resets it).
  const lastTop = React.useRef(0);
  const [scrollTop, setScrollTop] = React.useState(0);
  const [height, setHeight] = React.useState(400);
  const [ranksText, setRanksText] = React.useState(props.filter.ranks.join(','));
  const total = props.lines.length;

  // The viewport's height, measured only when it changes size (no forced layout per update).
  React.useEffect(() => {
    const node = scroller.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(entries => {
      setHeight(entries[0]?.contentRect.height || 400);
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, []);

  // Following: scroll to the end, computed from the row count rather than read from the DOM.
  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node && props.follow) {
      const end = Math.max(0, total * ROW_HEIGHT - height);
      lastTop.current = 0;
      node.scrollTop = total * ROW_HEIGHT; // the browser clamps it to the end
      setScrollTop(end);
    }
  }, [props.version, total, props.follow, height]);

  const onScroll = (): void => {
    const node = scroller.current;
    if (!node) {
      return;
    }
    const top = node.scrollTop;
    setScrollTop(top);
    if (props.follow && top < lastTop.current - ROW_HEIGHT) {
      props.onFollow(false); // the user scrolled up to read: stop following
    }
    lastTop.current = top;
  };

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(total, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  const rows: JSX.Element[] = [];
  for (let i = first; i < last; i++) {
    const line = props.lines[i] as LogLine;
    rows.push(
      <div
        key={line.seq}
        role="listitem"
        className={`jp-Distributed-line jp-mod-${line.stream}`}
        style={{ top: i * ROW_HEIGHT, height: ROW_HEIGHT }}
      >
        <span className="jp-Distributed-lineRank">[rank {line.rank}]</span>
        {line.stream === 'stderr' ? <span className="jp-Distributed-lineStream">stderr</span> : null}
        {line.text}
      </div>
    );
  }

  const ranksValid = parseRanks(ranksText) !== null;
  return (
    <div className="jp-Distributed-logs">
      <div className="jp-Distributed-toolbar" role="toolbar" aria-label="Log filters">
        <input
          type="search"
          aria-label="Search logs"
          placeholder="Search"
          value={props.filter.search}
          onChange={e => props.onFilter({ search: e.target.value })}
        />
        <input
          type="text"
          aria-label="Ranks to show"
          aria-invalid={!ranksValid}
          placeholder="Ranks: all (e.g. 0,2-3)"
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
          stderr only
        </label>
        <button className="jp-Button" onClick={() => props.onFollow(!props.follow)}>
          {props.follow ? 'Pause auto-scroll' : 'Resume auto-scroll'}
        </button>
        <span className="jp-Distributed-count" aria-label="Line count">
          {total} lines
        </span>
      </div>
      <div
        ref={scroller}
        className="jp-Distributed-logScroller"
        role="list"
        aria-label="Log lines"
        onScroll={onScroll}
      >
        <div style={{ height: total * ROW_HEIGHT, position: 'relative' }}>{rows}</div>
      </div>
    </div>
  );
}
