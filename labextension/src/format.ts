/**
 * Pure text formatting for the panel's views: no DOM, no I/O.
 */

/**
 * The panel's headline for a history of `count` runs.
 */
export function formatRunCount(count: number): string {
  if (!Number.isInteger(count) || count < 0) {
    throw new RangeError(`run count must be a non-negative integer, got ${count}`);
  }
  if (count === 0) {
    return 'No runs yet';
  }
  return count === 1 ? '1 run' : `${count} runs`;
}
