/**
 * The panel's user settings (JupyterLab's settings registry, schema in
 * `labextension/schema/plugin.json`), as one typed, checked object.
 */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

export interface IPanelConfig {
  /** Runs-list refresh interval in ms (backs off on errors up to 30 s). */
  refreshInterval: number;
  /** How many of the newest runs the list shows. */
  runListLength: number;
  /** The last this-many seconds of a run that plots show; 0 shows the whole run. */
  plotWindow: number;
}

/** The schema's defaults; also what the panel uses without a settings registry. */
export const DEFAULT_CONFIG: Readonly<IPanelConfig> = {
  refreshInterval: 2000,
  runListLength: 50,
  plotWindow: 0
};

const LIMITS: Record<keyof IPanelConfig, [number, number]> = {
  refreshInterval: [250, 600_000],
  runListLength: [1, 500],
  plotWindow: [0, Number.MAX_SAFE_INTEGER]
};

/** The settings' composite values as a config; a value out of range or of the wrong type keeps its default. */
export function readConfig(values: ReadonlyPartialJSONObject): IPanelConfig {
  const config = { ...DEFAULT_CONFIG };
  for (const key of Object.keys(LIMITS) as (keyof IPanelConfig)[]) {
    const value = values[key];
    const [lo, hi] = LIMITS[key];
    if (typeof value === 'number' && Number.isFinite(value) && value >= lo && value <= hi) {
      config[key] = value;
    }
  }
  return config;
}

/** How often the runs list is polled: the user's interval, backing off up to 30 s on errors. */
export function pollFrequency(config: IPanelConfig): { interval: number; backoff: boolean; max: number } {
  return { interval: config.refreshInterval, backoff: true, max: Math.max(30 * 1000, config.refreshInterval) };
}
