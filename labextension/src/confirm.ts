/**
 * The question Stop cluster asks first, as a JupyterLab dialog (Cancel / Stop).
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';

/** A `confirmStop` for the model: true when the user chose Stop. */
export function confirmStop(trans: TranslationBundle): (cluster: string) => Promise<boolean> {
  return async cluster => {
    const result = await showDialog({
      title: trans.__('Stop cluster?'),
      body: trans.__('Stop cluster %1? Its ranks end, and a cell running on it is interrupted.', cluster),
      buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.warnButton({ label: trans.__('Stop') })]
    });
    return result.button.accept;
  };
}
