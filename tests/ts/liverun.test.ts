import { describe, expect, it } from 'vitest';

import { LiveRunList, withLiveRun } from '../../labextension/src/liverun';
import { makeRun } from './fakes';

describe('the runs list with the selected run from its stream', () => {
  const listed = [makeRun('b', 20), makeRun('a', 10)];

  it("shows the stream's end at once, before the next poll", () => {
    const live = makeRun('a', 10, { state: 'completed', ended: 12, message: 'done' });
    const shown = withLiveRun(listed, live);
    expect(shown.map(r => r.state)).toEqual(['running', 'completed']);
    expect(shown[1]?.ended).toBe(12);
    expect(shown[1]?.message).toBe('done');
    expect(listed[1]?.state).toBe('running'); // the polled list itself is not changed
  });

  it('keeps the list where it is further along than the stream', () => {
    const ended = [makeRun('a', 10, { state: 'failed', ended: 11, message: 'rank 1 died' })];
    expect(withLiveRun(ended, makeRun('a', 10))).toBe(ended);
    const running = [makeRun('a', 10)];
    expect(withLiveRun(running, makeRun('a', 10, { state: 'pending' }))).toBe(running);
  });

  it('leaves the list alone without a live run, or when the live run is not listed', () => {
    expect(withLiveRun(listed, null)).toBe(listed);
    expect(withLiveRun(listed, makeRun('z', 30, { state: 'completed' }))).toBe(listed);
  });

  it('computes again only when the list or the live run changes', () => {
    const memo = new LiveRunList();
    const live = makeRun('a', 10, { state: 'stopped' });
    const first = memo.get(listed, live);
    expect(memo.get(listed, live)).toBe(first);
    expect(memo.get(listed, { ...live, state: 'failed' })).not.toBe(first);
  });
});
