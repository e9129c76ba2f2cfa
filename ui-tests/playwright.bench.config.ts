/**
 * The panel benchmark (../benchmarks/bench_panel.spec.ts) with the UI tests' set-up.
 */
import { defineConfig } from '@playwright/test';

import config from './playwright.config';

export default defineConfig({
  ...config,
  testDir: '../benchmarks',
  testMatch: 'bench_panel.spec.ts',
  reporter: [['list']]
});
