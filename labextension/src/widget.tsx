/**
 * The inline view of `%%distributed --widget`: an ipywidgets model whose state
 * the kernel owns (`jupyter_distributed/widgets.py`: the run, its ranks and its
 * events in the wire format) and a view that renders it with the panel's own
 * code (`inline.tsx`). One implementation of every rule.
 */

import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';
import * as React from 'react';
import { createRoot, type Root } from 'react-dom/client';

import { InlineRun, liveFrom, MODULE_NAME, MODULE_VERSION } from './inline';
import type { ISeqEvent } from './stream';
import type { RankInfo, Run } from './wire';

export class RunModel extends DOMWidgetModel {
  override defaults(): ReturnType<DOMWidgetModel['defaults']> {
    return {
      ...super.defaults(),
      _model_name: 'RunModel',
      _view_name: 'RunView',
      _model_module: MODULE_NAME,
      _view_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_module_version: MODULE_VERSION,
      run: null,
      ranks: [],
      events: []
    };
  }
}

export class RunView extends DOMWidgetView {
  override render(): void {
    this._root = createRoot(this.el);
    this.listenTo(this.model, 'change', this._draw);
    this._draw();
  }

  override remove(): void {
    this._root?.unmount();
    this._root = null;
    super.remove();
  }

  private _draw(): void {
    const run = this.model.get('run') as Run | null;
    if (!run || !this._root) {
      return;
    }
    const live = liveFrom(run, this.model.get('ranks') as RankInfo[], this.model.get('events') as ISeqEvent[]);
    // The version counts the events folded, so the plots redraw when more arrived.
    live.version = (this.model.get('events') as ISeqEvent[]).length + this._draws++;
    this._root.render(<InlineRun live={live} now={Date.now() / 1000} />);
  }

  private _root: Root | null = null;
  private _draws = 0;
}
