import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { DEFAULT_CONFIG } from '../../labextension/src/config';
import { canOpen, imageSource } from '../../labextension/src/image';
import { DistributedModel } from '../../labextension/src/model';
import type { DisplayReply, LogLine } from '../../labextension/src/wire';
import { fakeServer, type IFakeServer, MemoryState, settingsFor, until } from './fakes';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><circle r="4"/></svg>';

function line(seq: number, text: string, stream: LogLine['stream'] = 'display'): LogLine {
  return { seq, rank: 1, t: 0, stream, text };
}

function display(data: DisplayReply['data'], metadata: DisplayReply['metadata'] = {}): DisplayReply {
  return {
    kind: 'display',
    run_id: 'r1',
    rank: 1,
    t: 0,
    mark: '',
    data,
    metadata,
    display_id: null,
    update: false,
    result: false
  };
}

describe('which log lines open an image', () => {
  it('is the mark of a display whose richest type is an image', () => {
    expect(canOpen(line(1, 'image/png 640×480'))).toBe(true);
    expect(canOpen(line(1, 'image/jpeg 12.0 kB'))).toBe(true);
    expect(canOpen(line(1, 'image/svg+xml 3.1 kB'))).toBe(true);
    expect(canOpen(line(1, 'text/html 1.2 kB'))).toBe(false);
    expect(canOpen(line(1, 'application/vnd.plotly.v1+json 2.0 kB'))).toBe(false);
    expect(canOpen(line(1, 'image/png 640×480', 'stdout'))).toBe(false); // a printed line is text
  });
});

describe('an image source from a bundle', () => {
  it('makes PNG and JPEG base64 data: URLs, PNG first', () => {
    expect(imageSource({ 'image/png': PNG, 'image/jpeg': '/9j/4AAQ', 'text/plain': 'fig' })).toEqual({
      mime: 'image/png',
      src: `data:image/png;base64,${PNG}`,
      width: null,
      height: null
    });
    expect(imageSource({ 'image/jpeg': '/9j/\n4AAQ' })?.src).toBe('data:image/jpeg;base64,/9j/4AAQ');
  });

  it('keeps the display size of a retina figure', () => {
    const image = imageSource({ 'image/png': PNG }, { 'image/png': { width: 320, height: 240 } });
    expect([image?.width, image?.height]).toEqual([320, 240]);
  });

  it('makes SVG an image data: URL, its markup escaped, never HTML', () => {
    const image = imageSource({ 'image/svg+xml': [SVG.slice(0, 20), SVG.slice(20)], 'text/html': '<b>x</b>' });
    expect(image?.mime).toBe('image/svg+xml');
    expect(image?.src.startsWith('data:image/svg+xml;charset=utf-8,%3Csvg')).toBe(true);
    expect(image?.src).not.toMatch(/[<>"]/);
    expect(decodeURIComponent(image?.src.split(',')[1] ?? '')).toBe(SVG);
  });

  it('refuses what is not an image or not base64', () => {
    expect(imageSource({ 'text/html': '<img src=x onerror=alert(1)>', 'text/plain': 'x' })).toBeNull();
    expect(imageSource({ 'image/png': '"><script>alert(1)</script>' })).toBeNull();
    expect(imageSource({ 'image/png': 'javascript:alert(1)//' })).toBeNull();
    expect(imageSource({ 'image/png': { not: 'text' } })).toBeNull();
    expect(imageSource({ 'image/gif': 'R0lGODlh' })).toBeNull();
    // A bad PNG next to an SVG: the SVG is shown.
    expect(imageSource({ 'image/png': 'no!', 'image/svg+xml': SVG })?.mime).toBe('image/svg+xml');
  });
});

describe('opening a display image from the model', () => {
  let server: IFakeServer;
  let model: DistributedModel;

  beforeEach(() => {
    server = fakeServer();
    model = new DistributedModel({
      settings: settingsFor(server),
      state: new MemoryState(),
      config: { ...DEFAULT_CONFIG, refreshInterval: 10_000 },
      throttle: 10
    });
    model.select('r1');
  });

  afterEach(() => model.dispose());

  it('fetches the bundle of that run and display from the REST API', async () => {
    server.displays.set('r1/7', display({ 'image/png': PNG, 'text/plain': 'fig' }));
    const opening = model.openImage(line(7, 'image/png 1×1'));
    expect(model.image.opened).toMatchObject({ seq: 7, rank: 1, mark: 'image/png 1×1', image: null, error: '' });
    await opening;
    expect(model.image.opened?.image?.src).toBe(`data:image/png;base64,${PNG}`);
    const request = server.requests.find(r => r.url.includes('/displays/'));
    expect(new URL(request?.url ?? 'http://x/').pathname).toBe('/lab-base/jupyter-distributed/api/runs/r1/displays/7');
    model.image.close();
    expect(model.image.opened).toBeNull();
  });

  it('says why when the display is gone or holds no image', async () => {
    await model.openImage(line(8, 'image/png 1×1'));
    expect(model.image.opened?.image).toBeNull();
    expect(model.image.opened?.error).toContain('no display 8');
    server.displays.set('r1/9', display({ 'text/html': '<b>table</b>' }));
    await model.openImage(line(9, 'image/png 1×1'));
    expect(model.image.opened?.error).toBe('display 9 holds no PNG, JPEG or SVG image');
  });

  it('closes the image when another run is selected', async () => {
    server.displays.set('r1/7', display({ 'image/svg+xml': SVG }));
    await model.openImage(line(7, 'image/svg+xml 90 B'));
    await until(() => model.image.opened?.image?.mime === 'image/svg+xml');
    model.select('r2');
    expect(model.image.opened).toBeNull();
  });
});
