/**
 * Galata/Playwright configuration: Debian's Chromium (never a downloaded
 * browser), a Jupyter server started for the run with a fixed token.
 */

import * as path from 'node:path';
import { defineConfig } from '@playwright/test';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const port = process.env.UI_TEST_PORT ?? '8931';
const token = process.env.UI_TEST_TOKEN ?? 'ui-test-token';
process.env.UI_TEST_PORT = port;
process.env.UI_TEST_TOKEN = token;
// The run store shared by the server (and the kernels it starts) and the benchmark's feeder;
// jupyter_server_test_config.py empties it when the server starts.
process.env.JUPYTER_DISTRIBUTED_STORE = path.join(__dirname, '.server', 'runs.sqlite');

export default defineConfig({
  ...baseConfig,
  testDir: './tests',
  outputDir: './test-results',
  timeout: 120_000,
  retries: 0,
  workers: 1,
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${port}`,
    extraHTTPHeaders: { Authorization: `token ${token}` },
    video: 'off',
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  },
  webServer: {
    command: 'jupyter lab --config jupyter_server_test_config.py',
    url: `http://127.0.0.1:${port}/lab?token=${token}`,
    timeout: 120_000,
    reuseExistingServer: false
  }
});
