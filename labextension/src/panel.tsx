import { ReactWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { formatRunCount } from './format';

/**
 * The DOM id of the side panel; also its name for the layout restorer.
 */
export const PANEL_ID = 'jupyter-distributed:panel';

/**
 * Render-only view of the run history. It has no runs to show yet.
 */
export function RunsView(props: { runCount: number }): JSX.Element {
  return <p className="jp-Distributed-empty">{formatRunCount(props.runCount)}</p>;
}

/**
 * The "Distributed" side panel.
 */
export class DistributedPanel extends ReactWidget {
  constructor() {
    super();
    this.id = PANEL_ID;
    this.title.label = 'Distributed';
    this.title.caption = 'Distributed runs';
    this.addClass('jp-Distributed-panel');
  }

  protected render(): JSX.Element {
    return <RunsView runCount={0} />;
  }
}
