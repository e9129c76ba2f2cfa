import { describe, expect, it } from 'vitest';

import { FrameQueue } from '../../labextension/src/framequeue';

/** Frames that the test runs one at a time. */
function frames(): { request: (cb: () => void) => void; run: () => number } {
  let waiting: (() => void)[] = [];
  return {
    request: cb => {
      waiting.push(cb);
    },
    run: () => {
      const now = waiting;
      waiting = [];
      for (const cb of now) {
        cb();
      }
      return now.length;
    }
  };
}

describe('frame queue', () => {
  it('runs one work per frame, in the order asked', () => {
    const f = frames();
    const queue = new FrameQueue(f.request);
    const done: string[] = [];
    const [a, b, c] = [{}, {}, {}];
    queue.request(a, () => done.push('a'));
    queue.request(b, () => done.push('b'));
    queue.request(c, () => done.push('c'));
    expect(done).toEqual([]);
    f.run();
    expect(done).toEqual(['a']);
    f.run();
    f.run();
    expect(done).toEqual(['a', 'b', 'c']);
    expect(f.run()).toBe(0); // nothing left: no frame asked for
    expect(queue.pending).toBe(0);
  });

  it('keeps the place of a key asked again, with its newest work', () => {
    const f = frames();
    const queue = new FrameQueue(f.request);
    const done: string[] = [];
    const [a, b] = [{}, {}];
    queue.request(a, () => done.push('a1'));
    queue.request(b, () => done.push('b'));
    queue.request(a, () => done.push('a2'));
    expect(queue.pending).toBe(2);
    f.run();
    f.run();
    expect(done).toEqual(['a2', 'b']);
  });

  it('forgets a cancelled key', () => {
    const f = frames();
    const queue = new FrameQueue(f.request);
    const done: string[] = [];
    const [a, b] = [{}, {}];
    queue.request(a, () => done.push('a'));
    queue.request(b, () => done.push('b'));
    queue.cancel(a);
    f.run();
    expect(done).toEqual(['b']);
  });

  it('waits for an asynchronous work to settle before the next frame', async () => {
    const f = frames();
    const queue = new FrameQueue(f.request);
    const done: string[] = [];
    let finish: () => void = () => undefined;
    const [a, b] = [{}, {}];
    queue.request(a, () => new Promise<void>(resolve => (finish = resolve)).then(() => done.push('a')));
    queue.request(b, () => done.push('b'));
    f.run();
    expect(f.run()).toBe(0); // a is still drawing: no frame asked for b
    finish();
    await Promise.resolve();
    await Promise.resolve();
    f.run();
    expect(done).toEqual(['a', 'b']);
  });

  it('goes on after a work that failed', () => {
    const f = frames();
    const queue = new FrameQueue(f.request);
    const done: string[] = [];
    queue.request({}, () => {
      throw new Error('plotly');
    });
    queue.request({}, () => done.push('next'));
    expect(() => f.run()).toThrow('plotly');
    f.run();
    expect(done).toEqual(['next']);
  });
});
