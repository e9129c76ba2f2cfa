/**
 * Opening the image of a rich display from the Logs: which log lines can be
 * opened, and the image as an `<img>` source built from the recorded bundle.
 *
 * Only three types are ever shown, each as the `src` of an `<img>`: PNG and
 * JPEG as base64 `data:` URLs (checked to be base64), and SVG as an
 * `image/svg+xml` `data:` URL, where a browser never runs its scripts nor
 * loads what it links. Nothing of a bundle is ever inserted as HTML.
 */

import type { JSONObject, JSONValue } from '@lumino/coreutils';

import type { DistributedApi } from './api';
import type { LogLine } from './wire';

/** The image types that can be opened, preferred first. */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/svg+xml'] as const;

export type ImageType = (typeof IMAGE_TYPES)[number];

/** An image ready for an `<img>`: its type, `data:` URL and display size (retina figures) when known. */
export interface IImage {
  mime: ImageType;
  src: string;
  width: number | null;
  height: number | null;
}

/** A display opened from the Logs. */
export interface IOpenedImage {
  /** The seq of its log line (the display's event). */
  seq: number;
  rank: number;
  /** Its mark, as the log line shows it ("image/png 640×480"). */
  mark: string;
  /** Null while it loads, or when it cannot be shown (then `error` says why). */
  image: IImage | null;
  error: string;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Whether a log line is the mark of a display whose richest type is an image ("image/png 640×480"). */
export function canOpen(line: LogLine): boolean {
  return line.stream === 'display' && IMAGE_TYPES.some(mime => line.text.startsWith(`${mime} `));
}

/** The image of a MIME bundle as an `<img>` source; null when it holds no PNG, JPEG or SVG. */
export function imageSource(data: JSONObject, metadata: JSONObject = {}): IImage | null {
  for (const mime of IMAGE_TYPES) {
    const text = bundleText(data[mime]);
    if (text === null) {
      continue;
    }
    let src: string;
    if (mime === 'image/svg+xml') {
      src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;
    } else {
      const base64 = text.replace(/\s+/g, '');
      if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
        continue;
      }
      src = `data:${mime};base64,${base64}`;
    }
    const size = metadata[mime];
    const sized = typeof size === 'object' && size !== null && !Array.isArray(size) ? size : {};
    return { mime, src, width: dimension(sized.width), height: dimension(sized.height) };
  }
  return null;
}

/** Fetch the display of log line `line` of run `runId` and make its image. */
export async function loadImage(api: DistributedApi, runId: string, line: LogLine): Promise<IOpenedImage> {
  const opened = { seq: line.seq, rank: line.rank, mark: line.text };
  try {
    const reply = await api.display(runId, line.seq);
    const image = imageSource(reply.data, reply.metadata);
    return image
      ? { ...opened, image, error: '' }
      : { ...opened, image: null, error: `display ${line.seq} holds no PNG, JPEG or SVG image` };
  } catch (error) {
    return { ...opened, image: null, error: (error as Error).message };
  }
}

/** The display image opened from the Logs; the last one asked for wins. */
export class ImageOpener {
  constructor(private readonly _changed: () => void) {}

  /** Null when none is open. */
  get opened(): IOpenedImage | null {
    return this._opened;
  }

  async open(api: DistributedApi, runId: string, line: LogLine): Promise<void> {
    const opening: IOpenedImage = { seq: line.seq, rank: line.rank, mark: line.text, image: null, error: '' };
    this._opened = opening;
    this._changed();
    const opened = await loadImage(api, runId, line);
    if (this._opened === opening) {
      this._opened = opened; // (unless it was closed, or another one opened meanwhile)
      this._changed();
    }
  }

  close(): void {
    if (this._opened !== null) {
      this._opened = null;
      this._changed();
    }
  }

  private _opened: IOpenedImage | null = null;
}

/** A bundle's value as text: a string, or the list of lines nbformat also allows. */
function bundleText(value: JSONValue | undefined): string | null {
  if (typeof value === 'string') {
    return value;
  }
  if (Array.isArray(value) && value.every(v => typeof v === 'string')) {
    return value.join('');
  }
  return null;
}

function dimension(value: JSONValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null;
}
