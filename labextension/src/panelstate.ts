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

/** The panel's tab, and the saved state (with the selected run, which `selected` gives). */
export class PanelState {
  constructor(
    private readonly store: IStateStore | null,
    private readonly selected: () => string | null
  ) {}

  get tab(): Tab {
    return this._tab;
  }

  /** Show `tab`; whether it changed (then saved). */
  setTab(tab: Tab): boolean {
    if (tab === this._tab) {
      return false;
    }
    this._tab = tab;
    this.save();
    return true;
  }

  save(): void {
    savePanelState(this.store, { run: this.selected(), tab: this._tab });
  }

  /** Apply the saved state: its tab, and its run to `restoreRun`. */
  async restore(restoreRun: (id: string) => void): Promise<void> {
    const saved = await loadPanelState(this.store);
    // A choice the user made before the state arrived wins.
    if (saved.tab && this._tab === 'runs') {
      this._tab = saved.tab;
    }
    if (saved.run) {
      restoreRun(saved.run);
    }
  }

  private _tab: Tab = 'runs';
}
