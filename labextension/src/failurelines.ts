/**
 * A failed rank's error as lines of the Logs (pure): what happened, then its
 * traceback and notes, one line each, plain text. The rank's last lines of
 * output are in the Logs already and are not repeated.
 */

import type { RankFailure } from './wire';

const SIGNALS: Readonly<Record<number, string>> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  6: 'SIGABRT',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  15: 'SIGTERM'
};

/** What happened, as `errors.RankFailure.summary` says it (the rank is the line's chip). */
export function failureHeadline(f: RankFailure): string {
  switch (f.kind) {
    case 'exit':
      return f.signal !== null && f.signal !== undefined
        ? `killed by ${f.cause || SIGNALS[f.signal] || `signal ${f.signal}`}`
        : `exited with code ${f.exit_code}`;
    case 'timeout':
      return `timed out: ${f.evalue}`;
    case 'interrupted':
      return 'interrupted';
    default:
      return `raised ${f.ename}: ${f.evalue}`;
  }
}

/** The headline, then every line of the traceback and notes (colour codes removed). */
export function failureLines(f: RankFailure): string[] {
  const lines = [failureHeadline(f)];
  for (const entry of [...(f.traceback ?? []), ...(f.notes ?? [])]) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes from IPython's tracebacks
    const plain = entry.replace(/\u001b\[[0-9;]*m/g, '').replace(/\n+$/, '');
    lines.push(...plain.split('\n'));
  }
  return lines;
}
