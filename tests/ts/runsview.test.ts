import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { RunHeader } from '../../labextension/src/runsview';
import type { RunState } from '../../labextension/src/wire';
import { makeRun } from './fakes';

function header(state: RunState, onDelete?: () => void): string {
  const noop = (): void => undefined;
  const run = makeRun('r1', 1_000_000, { state });
  return renderToStaticMarkup(createElement(RunHeader, { run, onCancel: noop, onStop: noop, onDelete }));
}

function deleteButton(html: string): string {
  return /<button[^>]*>Delete<\/button>/.exec(html)?.[0] ?? '';
}

describe('the run header’s Delete', () => {
  it('is offered for a finished run', () => {
    const button = deleteButton(header('completed', () => undefined));
    expect(button).not.toBe('');
    expect(button).not.toContain('disabled');
  });

  it('is off for a running run, saying why', () => {
    const button = deleteButton(header('running', () => undefined));
    expect(button).toContain('disabled');
    expect(button).toContain('A running run cannot be deleted: cancel it first');
  });

  it('is absent where the header has no actions', () => {
    expect(deleteButton(header('completed'))).toBe('');
  });
});
