import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { clusterName } from '../../labextension/src/actions';
import { DEFAULT_CONFIG } from '../../labextension/src/config';
import { confirmStop } from '../../labextension/src/confirm';
import { formatRanks } from '../../labextension/src/format';
import { DistributedModel } from '../../labextension/src/model';
import { PanelView } from '../../labextension/src/panel';
import { FakeSocket, fakeServer, type IFakeServer, makeRun, settingsFor, until } from './fakes';

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
