import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { clusterName } from '../../labextension/src/actions';
import { DEFAULT_CONFIG } from '../../labextension/src/config';
import { confirmStop } from '../../labextension/src/confirm';
import { formatRanks } from '../../labextension/src/format';
import { DistributedModel } from '../../labextension/src/model';
import { PanelView } from '../../labextension/src/panel';
import { FakeSocket, fakeServer, type IFakeServer, makeRun, settingsFor, sleep, until } from './fakes';

const dialog = vi.hoisted(() => ({ accept: true, asked: [] as { title: string; body: string; labels: string[] }[] }));

vi.mock('@jupyterlab/apputils', () => ({
  ReactWidget: class {},
  Dialog: {
    cancelButton: (o: { label: string }) => ({ label: o.label, accept: false }),
    warnButton: (o: { label: string }) => ({ label: o.label, accept: true })
  },
  showDialog: async (o: { title: string; body: string; buttons: { label: string; accept: boolean }[] }) => {
    dialog.asked.push({ title: o.title, body: o.body, labels: o.buttons.map(b => b.label) });
    return { button: o.buttons.find(b => b.accept === dialog.accept) };
  }
}));

const NOW = 1_000_000;
let server: IFakeServer;
let model: DistributedModel | null = null;
const trans = {
  __: (s: string, ...a: unknown[]) => a.reduce<string>((t, v, i) => t.replace(`%${i + 1}`, String(v)), s)
};

function stops(): string[] {
  return server.requests.filter(r => r.method === 'POST').map(r => new URL(r.url).pathname);
}

async function opened(noticeMs?: number): Promise<DistributedModel> {
  server.details.set('r9', { run: makeRun('r9', NOW, { world_size: 4, ranks: [0, 1, 2, 3] }), ranks: [] });
  const m = new DistributedModel({
    settings: settingsFor(server),
    config: { ...DEFAULT_CONFIG, refreshInterval: 20 },
    throttle: 10,
    now: () => NOW,
    confirmStop: confirmStop(trans as never)
  });
  model = m;
  m.select('r9');
  await until(() => m.live?.run !== null);
  if (noticeMs !== undefined) {
    (m.actions as unknown as { _options: { noticeMs: number } })._options.noticeMs = noticeMs;
  }
  return m;
}

beforeEach(() => {
  server = fakeServer();
  FakeSocket.instances = [];
  dialog.accept = true;
  dialog.asked = [];
});

afterEach(() => {
  model?.dispose();
  model = null;
});

describe('Stop cluster', () => {
  it('asks first, with Cancel and Stop, naming the cluster', async () => {
    const m = await opened();
    await m.actions.stopCluster();
    expect(dialog.asked).toEqual([
      {
        title: 'Stop cluster?',
        body: 'Stop cluster local × 4 (ranks 0-3)? Its ranks end, and a cell running on it is interrupted.',
        labels: ['Cancel', 'Stop']
      }
    ]);
    expect(stops()).toEqual(['/lab-base/jupyter-distributed/api/clusters/c-r9/stop']);
  });

  it('stops nothing when the user cancels', async () => {
    dialog.accept = false;
    const m = await opened();
    await m.actions.stopCluster();
    expect(dialog.asked).toHaveLength(1);
    expect(stops()).toEqual([]);
    expect(m.actions.stopped).toBe('');
  });

  it('then says what it stopped, for a while', async () => {
    const m = await opened(30);
    await m.actions.stopCluster();
    expect(m.actions.stopped).toBe('local × 4 (ranks 0-3)');
    expect(renderToStaticMarkup(createElement(PanelView, { model: m }))).toContain(
      '<p class="jp-Distributed-notice" role="status">Stopped cluster local × 4 (ranks 0-3)</p>'
    );
    await until(() => m.actions.stopped === '');
  });

  it('says nothing was stopped when the server refused', async () => {
    const m = await opened();
    server.failWith = 500;
    await m.actions.stopCluster();
    expect(m.actions.stopped).toBe('');
    expect(m.error).not.toBe('');
    server.failWith = null;
  });
});

describe('the names of what is stopped', () => {
  it('spans consecutive ranks', () => {
    expect(formatRanks([3])).toBe('rank 3');
    expect(formatRanks([0, 1, 2, 3])).toBe('ranks 0-3');
    expect(formatRanks([5, 0, 1, 2])).toBe('ranks 0-2, 5');
    expect(clusterName(makeRun('r', NOW, { backend: 'slurm', world_size: 2, ranks: [0, 1] }))).toBe(
      'slurm × 2 (ranks 0-1)'
    );
  });
});

describe('busy buttons', () => {
  const header = (m: DistributedModel): string => renderToStaticMarkup(createElement(PanelView, { model: m }));
  const settle = (m: DistributedModel, ms: number): void => {
    Object.assign((m.actions as unknown as { _options: object })._options, { settleMs: ms, pollMs: 5 });
  };

  it('keeps Cancel busy after the request returned, until the run has ended', async () => {
    const m = await opened();
    server.endsRuns = false;
    const cancelling = m.actions.cancel();
    await until(() => stops().some(p => p.endsWith('/runs/r9/cancel')));
    await sleep(60); // the request returned and the list was read again: the run still runs
    expect(m.actions.isBusy('cancel')).toBe(true);
    expect(header(m)).toMatch(
      /<button type="button" class="jp-Button" disabled="" aria-busy="true">Cancelling…<\/button>/
    );
    (server.details.get('r9') as { run: { state: 'interrupted' } }).run.state = 'interrupted';
    await cancelling;
    expect(m.actions.isBusy('cancel')).toBe(false);
    expect(header(m)).not.toContain('Cancelling…');
  });

  it('keeps Stop cluster busy until the run on it has ended, and says so when it has not', async () => {
    const m = await opened();
    server.endsRuns = false;
    settle(m, 80);
    const stopping = m.actions.stopCluster();
    await until(() => stops().length === 1);
    expect(m.actions.isBusy('stop')).toBe(true);
    expect(header(m)).toContain('Stopping…');
    await stopping;
    expect(m.actions.isBusy('stop')).toBe(false);
    expect(m.error).toBe('run r9 is still running 0.08 s after the request: its kernel has not ended it yet');
    expect(m.actions.stopped).toBe('');
    expect(header(m)).toContain('Stop cluster</button>');
  });

  it('comes back at once when the server refuses, with its error shown', async () => {
    const m = await opened();
    server.failWith = 500;
    await m.actions.cancel();
    expect(m.actions.isBusy('cancel')).toBe(false);
    expect(m.error).toContain('the store is locked');
    expect(header(m)).toContain('role="alert"');
    expect(header(m)).toContain('Cancel run</button>');
    server.failWith = null;
  });

  it('runs one action of a kind at a time', async () => {
    const m = await opened();
    server.endsRuns = false;
    settle(m, 50);
    await Promise.all([m.actions.cancel(), m.actions.cancel()]);
    expect(stops().filter(p => p.endsWith('/cancel'))).toHaveLength(1);
  });
});
