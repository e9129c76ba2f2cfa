/**
 * The panel's strings go through JupyterLab's translator: views read the
 * bundle from this context (the plugin provides the app's translator).
 */

import { nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** The gettext domain of this extension's strings. */
export const DOMAIN = 'jupyter_distributed';

// Typed here so the emitted declarations name `TranslationBundle` wherever node_modules lives.
export const TransContext: React.Context<TranslationBundle> = React.createContext(nullTranslator.load(DOMAIN));

/** The translation bundle for the view being rendered. */
export function useTrans(): TranslationBundle {
  return React.useContext(TransContext);
}
