/**
 * Render-only: the log rows in view (virtualised: only the visible rows, plus
 * a margin, are in the DOM), each in the reusable slot `logwindow.ts` gives
 * it, so that new lines change the text of existing nodes. Lines are React
 * text nodes, never HTML; the mark of a display with an image ("image/png
 * 640×480") has an Open button.
 */

import * as React from 'react';

import { canOpen } from './image';
import { type IShownLine, ranksText } from './logcollapse';
import { ROW_HEIGHT, rowSlots } from './logwindow';
import { rankColor } from './palette';
import { useTrans } from './translate';
import type { LogLine } from './wire';

/** One row; rendered again only when its line, place or the list's length changed. */
const LogRow = React.memo(function LogRow(props: {
  line: IShownLine;
  index: number;
  total: number;
  onOpen?: (line: LogLine) => void;
}): JSX.Element {
  const { line, index, onOpen } = props;
  const trans = useTrans();
  return (
    <div
      role="listitem"
      aria-posinset={index + 1}
      aria-setsize={props.total}
      className={`jp-Distributed-line jp-mod-${line.stream}`}
      style={{ top: index * ROW_HEIGHT, height: ROW_HEIGHT }}
    >
      {line.ranks ? (
        // several ranks' line: no one rank's colour
        <span className="jp-Distributed-lineRank">{trans.__('[ranks %1]', ranksText(line.ranks))}</span>
      ) : (
        <span className="jp-Distributed-lineRank" style={{ color: rankColor(line.rank) }}>
          {trans.__('[rank %1]', line.rank)}
        </span>
      )}
      {line.stream === 'stderr' || line.stream === 'error' ? (
        <span className="jp-Distributed-lineStream">{line.stream}</span>
      ) : null}
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
});

export function LogRows(props: {
  lines: readonly IShownLine[];
  first: number;
  last: number;
  slots: number;
  /** Open the image of a display's log line. */
  onOpen?: (line: LogLine) => void;
}): JSX.Element {
  const total = props.lines.length;
  // One function for every row and render (the caller's changes each render), so that rows
  // whose line did not change are not rendered again.
  const latest = React.useRef(props.onOpen);
  latest.current = props.onOpen;
  const open = React.useCallback((line: LogLine) => latest.current?.(line), []);
  const onOpen = props.onOpen ? open : undefined;
  const rows: JSX.Element[] = [];
  rowSlots(props.first, props.last, props.slots).forEach((index, slot) => {
    if (index !== null) {
      rows.push(
        // biome-ignore lint/suspicious/noArrayIndexKey: the key is the row's slot, on purpose (see logwindow.ts)
        <LogRow key={slot} line={props.lines[index] as IShownLine} index={index} total={total} onOpen={onOpen} />
      );
    }
  });
  return <div style={{ height: total * ROW_HEIGHT, position: 'relative' }}>{rows}</div>;
}
