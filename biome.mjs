// Runs Biome's own binary for this machine. The registry we install from serves Biome's Linux
// binaries only, so package.json names those (optional, one per CPU) instead of the
// `@biomejs/biome` wrapper, whose other platforms `npm ci` cannot resolve.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const name = `@biomejs/cli-${process.platform}-${process.arch}`;
let binary;
try {
  binary = require.resolve(`${name}/biome`);
} catch {
  console.error(`error: ${name} is not installed; Biome runs on Linux x64 and arm64 here`);
  process.exit(1);
}
const result = spawnSync(binary, process.argv.slice(2), { stdio: 'inherit' });
process.exit(result.status ?? 1);
