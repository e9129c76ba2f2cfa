/**
 * Which log rows the Logs tab puts in the DOM, and where: only the rows in
 * view plus a margin, each in a reusable place ("slot") chosen by its index,
 * so that following a fast stream updates the text of the same few DOM nodes
 * instead of removing and creating rows. Pure arithmetic, no DOM.
 */

/** Height of one log row in px (fixed, so that rows can be placed without measuring). */
export const ROW_HEIGHT = 18;

/** Rows rendered above and below the visible ones. */
export const OVERSCAN = 20;

/** The indexes `[first, last)` of the rows to render for a viewport at `scrollTop` of `height` px. */
export function visibleRows(scrollTop: number, height: number, total: number): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(total, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  return [first, Math.max(first, last)];
}

/** How many slots a viewport of `height` px needs: never fewer than `visibleRows` returns. */
export function slotCount(height: number): number {
  return Math.ceil(Math.max(0, height) / ROW_HEIGHT) + 2 * OVERSCAN + 1;
}

/**
 * For each of `slots` slots, the row of `[first, last)` it shows (row `i` is always in slot
 * `i % slots`), or null when it shows none. Scrolling by k rows changes k slots; the slots'
 * order, and so the DOM's, never changes (rows are placed absolutely). Rows beyond the first
 * `slots` are left out.
 */
export function rowSlots(first: number, last: number, slots: number): (number | null)[] {
  const rows: (number | null)[] = new Array(Math.max(0, slots)).fill(null);
  for (let i = first; i < Math.min(last, first + slots); i++) {
    rows[i % slots] = i;
  }
  return rows;
}
