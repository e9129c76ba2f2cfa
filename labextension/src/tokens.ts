/**
 * What this extension offers other extensions: its model, as a Token. An
 * extension that lists `IDistributedModel` in `requires` or `optional` gets the
 * runs, the selected run's live state, and the `changed` signal.
 */

import { Token } from '@lumino/coreutils';

import type { DistributedModel } from './model';

export type IDistributedModel = Pick<
  DistributedModel,
  'runs' | 'selectedId' | 'selectedRun' | 'live' | 'changed' | 'select' | 'config' | 'refresh'
>;

export const IDistributedModel = new Token<IDistributedModel>(
  'jupyter-distributed:IDistributedModel',
  'The Distributed panel model: the run history and the live state of the selected run.'
);
