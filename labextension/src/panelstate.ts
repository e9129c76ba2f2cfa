/**
 * The panel state that survives a reload (the selected run and tab), kept in
 * JupyterLab's `IStateDB`, which stores it in the workspace: a reload, or the
 * same workspace opened elsewhere, restores it.
 */

import type { ReadonlyPartialJSONValue } from '@lumino/coreutils';

import { isTab, type Tab } from './tabs';

/** The key under which the panel state is saved. */
export const STATE_KEY = 'jupyter-distributed:panel';

/** The part of `IStateDB` the panel uses. */
export interface IStateStore {
  fetch(id: string): Promise<ReadonlyPartialJSONValue | undefined>;
  save(id: string, value: ReadonlyPartialJSONValue): Promise<unknown>;
}

export interface IPanelState {
  run: string | null;
  tab: Tab;
}

/** What was saved, checked; nothing when there is no store, no state, or a broken one. */
export async function loadPanelState(store: IStateStore | null): Promise<Partial<IPanelState>> {
  let saved: ReadonlyPartialJSONValue | undefined;
  try {
    saved = await store?.fetch(STATE_KEY);
  } catch {
    return {}; // No state database: start afresh.
  }
  if (!saved || typeof saved !== 'object' || Array.isArray(saved)) {
    return {};
  }
  const { run, tab } = saved as { run?: unknown; tab?: unknown };
  return {
    ...(typeof run === 'string' ? { run } : {}),
    ...(isTab(tab) ? { tab } : {})
  };
}

export function savePanelState(store: IStateStore | null, state: IPanelState): void {
  store?.save(STATE_KEY, { run: state.run, tab: state.tab }).catch(() => {
    // The state just does not survive a reload.
  });
}
