import { Signal } from '@lumino/signaling';
import { describe, expect, it } from 'vitest';

import {
  type ExecuteReply,
  type INotebookKernels,
  type IProbeHost,
  type ISessionInfo,
  layoutFlags,
  ProbeAction,
  probeCommand,
  probeRunId,
  sessionFor,
  sessionOf
} from '../../labextension/src/probe';
import type { Tab } from '../../labextension/src/tabs';
import { makeRun } from './fakes';

function session(id: string, path: string, kernel = true): ISessionInfo {
  return { id, path, kernel: kernel ? { id: `k-${id}`, name: 'python3' } : null };
}

const LAYOUT = {
  backend: 'local',
  layout: {
    nodes: 1,
    procs_per_node: 2,
    strategy: 'none',
    model_parallel: null,
    parameter_servers: 0,
    dist_backend: 'auto'
  },
  env: [['TOKEN', '***']],
  options: null
};

class FakeKernels implements INotebookKernels {
  readonly changed = new Signal<this, void>(this);
  running: ISessionInfo[] = [];
  calls: { session: string; code: string }[] = [];
  reply: ExecuteReply = { ok: true, stdout: '' };
  private _release: (() => void) | null = null;
  hold = false;

  sessions(): Iterable<ISessionInfo> {
    return this.running;
  }

  async execute(s: ISessionInfo, code: string): Promise<ExecuteReply> {
    this.calls.push({ session: s.id, code });
    if (this.hold) {
      await new Promise<void>(resolve => {
        this._release = resolve;
      });
    }
    return this.reply;
  }

  release(): void {
    this._release?.();
  }
}

class FakeHost implements IProbeHost {
  log: string[] = [];
  async refresh(): Promise<void> {
    this.log.push('refresh');
  }
  select(id: string | null): void {
    this.log.push(`select ${id}`);
  }
  setTab(tab: Tab): void {
    this.log.push(`tab ${tab}`);
  }
}

describe('sessionFor', () => {
  it('finds the session whose path ends the run’s absolute notebook path', () => {
    const sessions = [session('a', 'a.ipynb'), session('b', 'x/a.ipynb'), session('c', 'y/a.ipynb')];
    expect(sessionFor(sessions, '/srv/root/x/a.ipynb')?.id).toBe('b'); // the longest match
    expect(sessionFor(sessions, '/srv/root/a.ipynb')?.id).toBe('a');
    expect(sessionFor(sessions, 'a.ipynb')?.id).toBe('a');
    expect(sessionFor(sessions, '/srv/root/ba.ipynb')).toBeNull(); // a whole path segment only
    expect(sessionFor(sessions, '')).toBeNull();
    expect(sessionFor([session('d', 'x/a.ipynb', false)], '/r/x/a.ipynb')).toBeNull(); // no kernel
    expect(sessionFor([session('e', 'x\\a.ipynb')], 'C:\\r\\x\\a.ipynb')?.id).toBe('e');
  });

  it('finds a renamed notebook by a path its session had, after any current path', () => {
    const renamed = session('r', 'train.ipynb');
    const seen = new Map([['r', ['Untitled.ipynb', 'train.ipynb']]]);
    expect(sessionFor([renamed], '/srv/Untitled.ipynb', seen)?.id).toBe('r');
    expect(sessionFor([renamed, session('n', 'Untitled.ipynb')], '/srv/Untitled.ipynb', seen)?.id).toBe('n');
  });
});

describe('sessionOf', () => {
  it('finds the session of the run’s kernel first, whatever its notebook is called now', () => {
    const renamed = session('s', 'train.ipynb'); // its kernel is k-s; it started as Untitled
    const other = session('o', 'Untitled.ipynb'); // a new notebook under the old name
    const run = makeRun('r', 1, { notebook: '/srv/Untitled.ipynb', kernel_id: 'k-s' });
    expect(sessionOf([other, renamed], run)?.id).toBe('s');
  });

  it('falls back to the notebook path when the kernel is gone or the run names none', () => {
    const sessions = [session('o', 'Untitled.ipynb'), session('x', 'train.ipynb', false)];
    expect(sessionOf(sessions, makeRun('r', 1, { notebook: '/srv/Untitled.ipynb', kernel_id: 'k-gone' }))?.id).toBe(
      'o'
    );
    expect(sessionOf(sessions, makeRun('r', 1, { notebook: '/srv/Untitled.ipynb' }))?.id).toBe('o');
    const seen = new Map([['o', ['old.ipynb', 'Untitled.ipynb']]]);
    expect(sessionOf(sessions, makeRun('r', 1, { notebook: '/srv/old.ipynb' }), seen)?.id).toBe('o');
    expect(sessionOf(sessions, makeRun('r', 1, { notebook: '/srv/train.ipynb', kernel_id: 'k-x' }))).toBeNull();
  });
});

describe('probeCommand', () => {
  it('names the run’s cluster and repeats its layout', () => {
    const run = makeRun('r', 1, { cluster_id: 'c-1', spec: LAYOUT });
    expect(probeCommand(run)).toBe(
      '%distributed probe --quick --cluster c-1 --backend local --nodes 1 --procs-per-node 2'
    );
  });

  it('repeats the parallelism settings and quotes what needs it', () => {
    const spec = {
      backend: 'mpi',
      layout: {
        nodes: 2,
        procs_per_node: 4,
        strategy: 'model-parallel',
        model_parallel: {
          partitions: 2,
          microbatches: 4,
          pipeline: 'simple',
          placement: 'spread',
          optimize: 'memory',
          tensor_parallel: 2
        },
        parameter_servers: 0,
        dist_backend: 'gloo'
      }
    };
    expect(layoutFlags(makeRun('r', 1, { spec })).join(' ')).toBe(
      '--backend mpi --nodes 2 --procs-per-node 4 --strategy model-parallel --partitions 2 --microbatches 4 ' +
        '--pipeline simple --placement spread --optimize memory --tensor-parallel 2 --dist-backend gloo'
    );
    const ps = { ...LAYOUT, layout: { ...LAYOUT.layout, strategy: 'parameter-server', parameter_servers: 1 } };
    expect(layoutFlags(makeRun('r', 1, { spec: ps }))).toContain('--parameter-servers');
    const odd = makeRun('r', 1, { cluster_id: "it's", spec: { ...LAYOUT, backend: 'my backend' } });
    expect(probeCommand(odd)).toContain(`--cluster 'it'"'"'s' --backend 'my backend'`);
  });

  it('sends only the cluster when the run stored no layout', () => {
    expect(probeCommand(makeRun('r', 1, { cluster_id: 'c-9', spec: {} }))).toBe(
      '%distributed probe --quick --cluster c-9'
    );
  });

  it('reads the probe’s run id from what the magic printed', () => {
    expect(probeRunId('probe run-42: 2 rank(s) on 1 host(s), gloo, 1.2s\n  link ...')).toBe('run-42');
    expect(probeRunId('nothing')).toBeNull();
  });
});

describe('ProbeAction', () => {
  function setUp(): { kernels: FakeKernels; host: FakeHost; action: ProbeAction } {
    const kernels = new FakeKernels();
    const host = new FakeHost();
    return { kernels, host, action: new ProbeAction(kernels, host) };
  }

  it('is blocked with a reason until a kernel has the run’s notebook', () => {
    const { kernels, action } = setUp();
    const run = makeRun('r', 1, { notebook: '/srv/n.ipynb' });
    expect(action.blocked(run)).toBe('no-kernel');
    expect(action.blocked({ ...run, notebook: '' })).toBe('no-notebook');
    expect(action.blocked({ ...run, world_size: 1 })).toBe('too-small');
    let changes = 0;
    action.changed.connect(() => changes++);
    kernels.running = [session('s', 'n.ipynb')];
    kernels.changed.emit();
    expect(changes).toBe(1); // the view redraws the button
    expect(action.blocked(run)).toBeNull();
  });

  it('remembers the paths a session had', () => {
    const { kernels, action } = setUp();
    kernels.running = [session('s', 'Untitled.ipynb')];
    kernels.changed.emit();
    kernels.running = [session('s', 'train.ipynb')]; // renamed; its kernel still says Untitled
    kernels.changed.emit();
    expect(action.blocked(makeRun('r', 1, { notebook: '/srv/Untitled.ipynb' }))).toBeNull();
    kernels.running = [];
    kernels.changed.emit();
    kernels.running = [session('s2', 'train.ipynb')];
    kernels.changed.emit();
    expect(action.blocked(makeRun('r', 1, { notebook: '/srv/Untitled.ipynb' }))).toBe('no-kernel');
  });

  it('runs the probe in that kernel, then shows the probe’s run in the Scaling tab', async () => {
    const { kernels, host, action } = setUp();
    kernels.running = [session('other', 'm.ipynb'), session('s', 'n.ipynb')];
    const run = makeRun('r', 1, { notebook: '/srv/n.ipynb', cluster_id: 'c-1', spec: LAYOUT });
    kernels.hold = true;
    kernels.reply = { ok: true, stdout: 'probe run-p: 2 rank(s) on 1 host(s)\n' };
    const done = action.probe(run);
    expect(action.probing).toBe('r');
    expect(action.blocked(run)).toBe('busy');
    expect(kernels.calls).toEqual([{ session: 's', code: probeCommand(run) }]);
    kernels.release();
    await done;
    expect(action.probing).toBeNull();
    expect(action.error).toBe('');
    expect(host.log).toEqual(['refresh', 'select run-p', 'tab scaling']);
  });

  it('keeps an error reply as one line', async () => {
    const { kernels, host, action } = setUp();
    kernels.running = [session('s', 'n.ipynb')];
    kernels.reply = {
      ok: false,
      error: '\u001b[0;31mUsageError\u001b[0m: cluster c-1 is no longer running in this kernel\nmore'
    };
    await action.probe(makeRun('r', 1, { notebook: '/srv/n.ipynb' }));
    expect(action.error).toBe('UsageError: cluster c-1 is no longer running in this kernel');
    expect(host.log).toEqual([]);
    kernels.reply = { ok: true, stdout: '' };
    const again = action.probe(makeRun('r', 1, { notebook: '/srv/n.ipynb' }));
    expect(action.error).toBe(''); // cleared when the next probe starts
    await again;
  });

  it('probes in the kernel that ran the run, after its notebook was renamed', async () => {
    const { kernels, action } = setUp();
    kernels.running = [session('new', 'Untitled.ipynb'), session('s', 'train.ipynb')];
    const run = makeRun('r', 1, { notebook: '/srv/Untitled.ipynb', kernel_id: 'k-s' });
    expect(action.blocked(run)).toBeNull();
    await action.probe(run);
    expect(kernels.calls).toEqual([{ session: 's', code: probeCommand(run) }]);
  });

  it('does nothing for a blocked run', async () => {
    const { kernels, action } = setUp();
    await action.probe(makeRun('r', 1, { notebook: '/srv/n.ipynb' }));
    expect(kernels.calls).toEqual([]);
  });
});
