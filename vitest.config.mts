import { defineConfig } from 'vitest/config';

// Unit tests of the panel's pure TypeScript code; browser tests live in ui-tests/.
export default defineConfig({
  test: {
    include: ['tests/ts/**/*.test.ts'],
    environment: 'node'
  }
});
