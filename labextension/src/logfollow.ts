/**
 * The Logs tab's scrolling: the viewport's size, its scroll position, and
 * following (staying at the end as lines arrive, stopped when the user
 * scrolls up to read). While following, the rows shown are computed from the
 * row count: a new batch of lines is one render, not a render and then
 * another for the scroll event it causes.
 */

import * as React from 'react';

export interface ILogScroll {
  scroller: React.RefObject<HTMLDivElement>;
  /** The scroll position to render rows for. */
  scrollTop: number;
  height: number;
  onScroll: () => void;
}

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
  // The scroll position seen last: moving up from it is the user's doing (following only
  // ever moves down; a shorter, filtered list resets it).
  const lastTop = React.useRef(0);
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
      lastTop.current = 0;
      node.scrollTop = total * rowHeight; // the browser clamps it to the end
    }
  }, [version, total, follow, height, rowHeight]);

  // Following stopped: render from where the view is now.
  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node && !follow) {
      setScrollTop(node.scrollTop);
    }
  }, [follow]);

  const onScroll = (): void => {
    const node = scroller.current;
    if (!node) {
      return;
    }
    const top = node.scrollTop;
    if (!follow) {
      setScrollTop(top);
    } else if (top < lastTop.current - rowHeight) {
      setScrollTop(top);
      onFollow(false); // the user scrolled up to read: stop following
    }
    lastTop.current = top;
  };

  // While following, the end: what the layout effect scrolls to.
  const tail = Math.max(0, total * rowHeight - height);
  return { scroller, scrollTop: follow ? tail : scrollTop, height, onScroll };
}
