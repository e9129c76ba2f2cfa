/**
 * The panel's tabs, in order: the one list that names them. The views that
 * render each tab are keyed by these ids (`tabviews.tsx`), so the compiler
 * asks for a view when a tab is added here.
 */

export const TABS = [
  { id: 'runs', label: 'Runs', needsRun: false },
  { id: 'ranks', label: 'Ranks', needsRun: true },
  { id: 'logs', label: 'Logs', needsRun: true },
  { id: 'throughput', label: 'Throughput', needsRun: true },
  { id: 'scaling', label: 'Scaling', needsRun: true }
] as const;

export type Tab = (typeof TABS)[number]['id'];

export function isTab(value: unknown): value is Tab {
  return TABS.some(t => t.id === value);
}
