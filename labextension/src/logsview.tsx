/**
 * Render-only: the Logs tab, a toolbar over the virtualised rows of the lines
 * that pass the filter, following the end while asked to; an image opened from
 * a display's line shows between the two.
 */

import * as React from 'react';

import type { IOpenedImage } from './image';
import { ImageView } from './imageview';
import type { ILogFilter } from './logbuffer';
import type { IShownLine } from './logcollapse';
import { useLogScroll } from './logfollow';
import { LogRows } from './logrows';
import { LogToolbar } from './logtoolbar';
import { ROW_HEIGHT, slotCount, visibleRows } from './logwindow';
import { useTrans } from './translate';
import type { LogLine } from './wire';

export interface ILogsViewProps {
  lines: readonly IShownLine[];
  /** Changes whenever `lines` grew (the array itself is reused). */
  version: number;
  filter: ILogFilter;
  follow: boolean;
  /** Whether identical lines of several ranks show once. */
  collapsed: boolean;
  onCollapse: (collapsed: boolean) => void;
  onFilter: (filter: Partial<ILogFilter>) => void;
  onFollow: (follow: boolean) => void;
  /** The display image opened from a line, if any. */
  image: IOpenedImage | null;
  onOpen: (line: LogLine) => void;
  onCloseImage: () => void;
}

export function LogsView(props: ILogsViewProps): JSX.Element {
  const trans = useTrans();
  const total = props.lines.length;
  const scroll = useLogScroll({
    total,
    rowHeight: ROW_HEIGHT,
    version: props.version,
    follow: props.follow,
    onFollow: props.onFollow
  });
  const [first, last] = visibleRows(scroll.scrollTop, scroll.height, total);
  return (
    <div className="jp-Distributed-logs">
      <LogToolbar
        filter={props.filter}
        follow={props.follow}
        collapsed={props.collapsed}
        onCollapse={props.onCollapse}
        total={total}
        onFilter={props.onFilter}
        onFollow={props.onFollow}
      />
      {props.image ? <ImageView opened={props.image} onClose={props.onCloseImage} /> : null}
      <div
        ref={scroll.scroller}
        className="jp-Distributed-logScroller"
        role="list"
        aria-label={trans.__('Log lines')}
        onScroll={scroll.onScroll}
        onWheel={scroll.onWheel}
        onKeyDown={scroll.onKeyDown}
      >
        <LogRows lines={props.lines} first={first} last={last} slots={slotCount(scroll.height)} onOpen={props.onOpen} />
      </div>
    </div>
  );
}
