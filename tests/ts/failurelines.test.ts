import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { failureHeadline } from '../../labextension/src/failurelines';
import { ALL_LINES } from '../../labextension/src/logbuffer';
import { LogRows } from '../../labextension/src/logrows';
import { RunLive } from '../../labextension/src/runstate';
import type { RankFailure } from '../../labextension/src/wire';

const T = 1_000_000;

function failure(extra: Partial<RankFailure> = {}): RankFailure {
  return {
    rank: 1,
    t: T + 2,
    host: 'h',
    pid: 11,
    ename: 'ZeroDivisionError',
    evalue: 'division by zero',
    traceback: [
      'Traceback (most recent call last):\n',
      '  File "<cell>", line 3, in <module>\n    x = 1 / 0\n',
      '\u001b[0;31mZeroDivisionError\u001b[0m: division by zero\n'
    ],
    exit_code: null,
    signal: null,
    kind: 'exception',
    ...extra
  };
}

function failedRun(): RunLive {
  const live = new RunLive('r');
  live.apply([
    { seq: 1, event: { kind: 'output', run_id: 'r', rank: 0, t: T + 1, stream: 'stdout', text: 'step 1' } },
    { seq: 2, event: { kind: 'error', run_id: 'r', rank: 1, t: T + 2, failure: failure() } }
  ]);
  return live;
}

describe('a failed rank’s error in the Logs', () => {
  it('is there, line by line, after the rank’s output, as error lines', () => {
    const lines = failedRun().logs.filtered(ALL_LINES);
    expect(lines.map(l => [l.rank, l.stream, l.text])).toEqual([
      [0, 'stdout', 'step 1'],
      [1, 'error', 'raised ZeroDivisionError: division by zero'],
      [1, 'error', 'Traceback (most recent call last):'],
      [1, 'error', '  File "<cell>", line 3, in <module>'],
      [1, 'error', '    x = 1 / 0'],
      [1, 'error', 'ZeroDivisionError: division by zero']
    ]);
  });

  it('is kept by the stderr-only filter', () => {
    const errors = failedRun().logs.filtered({ ...ALL_LINES, stderrOnly: true });
    expect(errors.map(l => l.stream)).toEqual(Array(5).fill('error'));
  });

  it('is drawn with the error style and an "error" mark', () => {
    const lines = failedRun().logs.filtered(ALL_LINES);
    const html = renderToStaticMarkup(createElement(LogRows, { lines, first: 0, last: 2, slots: 2 }));
    expect(html).toContain('class="jp-Distributed-line jp-mod-error"');
    expect(html).toContain('<span class="jp-Distributed-lineStream">error</span>raised ZeroDivisionError');
  });

  it('says how a rank that did not raise ended', () => {
    expect(failureHeadline(failure({ kind: 'exit', signal: 9, traceback: [] }))).toBe('killed by SIGKILL');
    expect(failureHeadline(failure({ kind: 'exit', signal: 9, cause: 'the out-of-memory killer' }))).toBe(
      'killed by the out-of-memory killer'
    );
    expect(failureHeadline(failure({ kind: 'exit', exit_code: 3 }))).toBe('exited with code 3');
    expect(failureHeadline(failure({ kind: 'timeout', evalue: 'no heartbeat for 30 s' }))).toBe(
      'timed out: no heartbeat for 30 s'
    );
  });
});
