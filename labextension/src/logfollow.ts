/**
 * The Logs tab's scrolling: the viewport's size, its scroll position, and
 * following (staying at the end as lines arrive, stopped when the user
 * scrolls up to read). While following, the rows shown are computed from the
 * row count: a new batch of lines is one render, not a render and then
 * another for the scroll event it causes. The user's scrolling up is seen on
 * the wheel or key that does it, and on a scroll to above where following put
 * the view (the scroll bar), so that lines arriving 4 times a second never pull
 * the view back down from under the user.
 */

import * as React from 'react';

export interface ILogScroll {
  scroller: React.RefObject<HTMLDivElement>;
  /** The scroll position to render rows for. */
  scrollTop: number;
  height: number;
  onScroll: () => void;
  onWheel: (event: React.WheelEvent) => void;
  onKeyDown: (event: React.KeyboardEvent) => void;
}

/** Keys that scroll a list up. */
const UP_KEYS = new Set(['ArrowUp', 'PageUp', 'Home']);

export function useLogScroll(options: {
  /** Rows that pass the filter, and the height of one. */
  total: number;
  rowHeight: number;
  /** Changes whenever lines arrived. */
  version: number;
  follow: boolean;
  onFollow: (follow: boolean) => void;
}): ILogScroll {
  const { total, rowHeight, version, follow, onFollow } = options;
  const scroller = React.useRef<HTMLDivElement>(null);
  // Where following last put the view: a scroll to above it is the user's doing.
  const followedTop = React.useRef<number | null>(null);
  // The user's scroll position, while not following.
  const [scrollTop, setScrollTop] = React.useState(0);
  const [height, setHeight] = React.useState(400);

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

  // Following: scroll to the end (the rows there are already rendered).
  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node && follow) {
      node.scrollTop = total * rowHeight; // the browser clamps it to the end
      followedTop.current = node.scrollTop;
    }
  }, [version, total, follow, height, rowHeight]);

  // Following stopped: render from where the view is now.
  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node && !follow) {
      setScrollTop(node.scrollTop);
    }
  }, [follow]);

  const stopFollowing = (): void => {
    followedTop.current = null;
    setScrollTop(scroller.current?.scrollTop ?? 0);
    onFollow(false); // the user scrolls up to read
  };

  const onScroll = (): void => {
    const top = scroller.current?.scrollTop ?? 0;
    if (!follow) {
      setScrollTop(top);
    } else if (followedTop.current !== null && top < followedTop.current - rowHeight) {
      stopFollowing(); // the scroll bar, dragged up
    }
  };

  const onWheel = (event: React.WheelEvent): void => {
    if (follow && event.deltaY < 0) {
      stopFollowing();
    }
  };

  const onKeyDown = (event: React.KeyboardEvent): void => {
    if (follow && UP_KEYS.has(event.key)) {
      stopFollowing();
    }
  };

  // While following, the end: what the layout effect scrolls to.
  const tail = Math.max(0, total * rowHeight - height);
  return { scroller, scrollTop: follow ? tail : scrollTop, height, onScroll, onWheel, onKeyDown };
}
