/**
 * The Logs tab's scrolling: the viewport's size, its scroll position, and
 * following (staying at the end as lines arrive, stopped when the user
 * scrolls up to read).
 */

import * as React from 'react';

export interface ILogScroll {
  scroller: React.RefObject<HTMLDivElement>;
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

  // Following: scroll to the end, computed from the row count rather than read from the DOM.
  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node && follow) {
      const end = Math.max(0, total * rowHeight - height);
      lastTop.current = 0;
      node.scrollTop = total * rowHeight; // the browser clamps it to the end
      setScrollTop(end);
    }
  }, [version, total, follow, height, rowHeight]);

  const onScroll = (): void => {
    const node = scroller.current;
    if (!node) {
      return;
    }
    const top = node.scrollTop;
    setScrollTop(top);
    if (follow && top < lastTop.current - rowHeight) {
      onFollow(false); // the user scrolled up to read: stop following
    }
    lastTop.current = top;
  };

  return { scroller, scrollTop, height, onScroll };
}
