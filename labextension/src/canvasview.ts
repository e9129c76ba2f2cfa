/**
 * What a canvas figure's view follows to be drawn right (the line plots of
 * `plotsview.tsx`, the heatmap of `heatmapview.tsx`): its width, the theme
 * and the screen's pixel density; and the queue that draws every figure of
 * the page, one per animation frame.
 */

import * as React from 'react';

import { type ITheme, themeColors } from './canvas';
import { FrameQueue } from './framequeue';

/** Every canvas figure of the page draws through this queue: one draw per animation frame. */
export const DRAWS = new FrameQueue();

export interface ICanvasState {
  /** The canvas' width in CSS pixels, followed without forcing a layout (0 until it is laid out). */
  width: React.MutableRefObject<number>;
  /** The theme's colours, read once per theme (reading them forces a style recalculation). */
  theme: (node: HTMLElement) => ITheme;
  /** Counts the changes after which the canvas must be drawn again: its width, the theme, the pixel density. */
  changes: number;
}

/** Follow `canvas`' width, the theme and the pixel density (a render when one changes). */
export function useCanvasState(canvas: React.RefObject<HTMLCanvasElement>): ICanvasState {
  const width = React.useRef(0);
  const theme = React.useRef<ITheme | null>(null);
  const [changes, setChanges] = React.useState(0);
  React.useEffect(() => {
    const node = canvas.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(entries => {
      const w = Math.floor(entries[0]?.contentRect.width ?? 0);
      if (w !== width.current) {
        width.current = w;
        setChanges(c => c + 1); // a canvas whose size changed is blank until drawn
      }
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, []);
  // Drawn in the new colours when the user switches theme (JupyterLab names it on <body>).
  React.useEffect(() => {
    if (typeof MutationObserver === 'undefined') {
      return;
    }
    const observer = new MutationObserver(() => {
      theme.current = null;
      setChanges(c => c + 1);
    });
    observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-name'] });
    return () => observer.disconnect();
  }, []);
  // Drawn sharp when the screen's pixel density changes (a zoom, another monitor).
  const [ratio, setRatio] = React.useState(() => (typeof devicePixelRatio === 'number' ? devicePixelRatio : 1));
  React.useEffect(() => {
    if (typeof matchMedia !== 'function') {
      return;
    }
    const query = matchMedia(`(resolution: ${ratio}dppx)`);
    const changed = (): void => {
      setRatio(devicePixelRatio);
      setChanges(c => c + 1);
    };
    query.addEventListener('change', changed);
    return () => query.removeEventListener('change', changed);
  }, [ratio]);
  // When the figure goes: no draw for it any more. (The node is taken now: React empties the ref
  // before this cleanup runs.)
  React.useEffect(() => {
    const node = canvas.current;
    return () => {
      if (node) {
        DRAWS.cancel(node);
      }
    };
  }, []);
  return {
    width,
    theme: node => {
      theme.current ??= themeColors(node);
      return theme.current;
    },
    changes
  };
}

/** Set an attribute only when it changes (each change costs the page a style invalidation). */
export function setAttr(node: Element, name: string, value: string): void {
  if (node.getAttribute(name) !== value) {
    node.setAttribute(name, value);
  }
}
