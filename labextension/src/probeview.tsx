/**
 * Render-only: the Probe button of the selected run's header (the action is
 * `probe.ts`'s `ProbeAction`).
 */

import * as React from 'react';

import type { ProbeAction } from './probe';
import { useTrans } from './translate';
import type { Run } from './wire';

export function ProbeButton(props: { probe: ProbeAction; run: Run }): JSX.Element {
  const trans = useTrans();
  const { probe, run } = props;
  const blocked = probe.blocked(run);
  const busy = probe.probing === run.id;
  const why: Record<NonNullable<typeof blocked>, string> = {
    'no-notebook': trans.__('This run was not started from a notebook'),
    'too-small': trans.__('A probe needs at least 2 ranks'),
    'no-kernel': trans.__('No running kernel has %1 open', run.notebook.split('/').pop() ?? ''),
    busy: trans.__('A probe is running')
  };
  return (
    <button
      type="button"
      className="jp-Button"
      disabled={blocked !== null}
      aria-busy={busy}
      title={
        blocked === null
          ? trans.__('Measure the links between the ranks (%distributed probe --quick) in the notebook’s kernel')
          : why[blocked]
      }
      onClick={() => void probe.probe(run)}
    >
      {busy ? trans.__('probing…') : trans.__('Probe')}
    </button>
  );
}
