/**
 * Render-only: the log rows in view (virtualised: only the visible rows, plus
 * a margin, are in the DOM). Lines are React text nodes, never HTML; the mark
 * of a display with an image ("image/png 640×480") has an Open button.
 */

import * as React from 'react';

import { canOpen } from './image';
import { useTrans } from './translate';
import type { LogLine } from './wire';

/** Height of one log row in px (fixed, so that rows can be placed without measuring). */
export const ROW_HEIGHT = 18;

/** Rows rendered above and below the visible ones. */
const OVERSCAN = 20;

/** The indexes `[first, last)` of the rows to render for a viewport at `scrollTop` of `height` px. */
export function visibleRows(scrollTop: number, height: number, total: number): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(total, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  return [first, Math.max(first, last)];
}

export function LogRows(props: {
  lines: readonly LogLine[];
  first: number;
  last: number;
  /** Open the image of a display's log line. */
  onOpen?: (line: LogLine) => void;
}): JSX.Element {
  const onOpen = props.onOpen;
  const trans = useTrans();
  const rows: JSX.Element[] = [];
  for (let i = props.first; i < props.last; i++) {
    const line = props.lines[i] as LogLine;
    rows.push(
      <div
        key={line.seq}
        role="listitem"
        className={`jp-Distributed-line jp-mod-${line.stream}`}
        style={{ top: i * ROW_HEIGHT, height: ROW_HEIGHT }}
      >
        <span className="jp-Distributed-lineRank">{trans.__('[rank %1]', line.rank)}</span>
        {line.stream === 'stderr' ? <span className="jp-Distributed-lineStream">stderr</span> : null}
        {line.text}
        {onOpen && canOpen(line) ? (
          <button
            type="button"
            className="jp-Distributed-lineOpen"
            aria-label={trans.__('Open the image of rank %1: %2', line.rank, line.text)}
            onClick={() => onOpen(line)}
          >
            {trans.__('Open')}
          </button>
        ) : null}
      </div>
    );
  }
  return <div style={{ height: props.lines.length * ROW_HEIGHT, position: 'relative' }}>{rows}</div>;
}
