/**
 * The live event stream of one run over a WebSocket: snapshot-then-subscribe
 * on the server side, reconnection from the last sequence number seen here,
 * so that nothing is missed or duplicated across a reconnect.
 */

import { type ISignal, Signal } from '@lumino/signaling';

import { batchSince, isItem, lastSeqOf, type StreamPart } from './nodebatch';
import type { StreamItem, StreamMessage } from './wire';

export type { StreamPart } from './nodebatch';

export interface IEventStreamOptions {
  /** The URL to connect to, resuming after `after`. */
  url: (after: number) => string;
  /** The WebSocket constructor (from the server settings). */
  WebSocket: typeof WebSocket;
  /** Sequence number to start after. */
  after?: number;
  /** First reconnection delay in ms; doubles up to `maxDelay`. */
  delay?: number;
  maxDelay?: number;
}

/** One event with its sequence number. */
export type ISeqEvent = StreamItem;

export class EventStream {
  constructor(options: IEventStreamOptions) {
    this._options = options;
    this._lastSeq = options.after ?? 0;
    this._delay = options.delay ?? 500;
    this._connect();
  }

  /**
   * The new parts of each message, each event once: events one by one (in
   * sequence order) or, from a server that batches rows per node, node
   * batches between events sent alone (see `StreamMessage`).
   */
  get received(): ISignal<this, StreamPart[]> {
    return this._received;
  }

  /** Whether the socket is open now. */
  get connected(): boolean {
    return this._socket?.readyState === 1;
  }

  get lastSeq(): number {
    return this._lastSeq;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    const socket = this._socket;
    this._socket = null;
    socket?.close();
    Signal.clearData(this);
  }

  private _connect(): void {
    const socket = new this._options.WebSocket(this._options.url(this._lastSeq));
    this._socket = socket;
    socket.onopen = () => {
      this._delay = this._options.delay ?? 500;
    };
    socket.onmessage = (message: MessageEvent) => {
      if (this._socket === socket) {
        this._onMessage(String(message.data));
      }
    };
    socket.onclose = () => {
      if (this._socket === socket && !this._disposed) {
        this._socket = null;
        this._reconnectLater();
      }
    };
  }

  private _reconnectLater(): void {
    const delay = this._delay;
    this._delay = Math.min(delay * 2, this._options.maxDelay ?? 10000);
    this._timer = setTimeout(() => {
      this._timer = null;
      if (!this._disposed) {
        this._connect();
      }
    }, delay);
  }

  private _onMessage(data: string): void {
    let message: StreamMessage;
    try {
      message = JSON.parse(data) as StreamMessage;
    } catch {
      return; // Not ours: ignore rather than break the stream.
    }
    const fresh: StreamPart[] = [];
    for (const item of message.events ?? []) {
      if (item.seq > this._lastSeq) {
        this._lastSeq = item.seq;
        fresh.push(item);
      }
    }
    // Batches interleave in seq: what the last message left behind is cut off, then the cursor moves.
    const after = this._lastSeq;
    let last = after;
    for (const part of message.batches ?? []) {
      const kept = isItem(part) ? (part.seq > after ? part : null) : batchSince(part, after);
      if (kept) {
        fresh.push(kept);
        last = Math.max(last, lastSeqOf(kept));
      }
    }
    this._lastSeq = last;
    if (fresh.length) {
      this._received.emit(fresh);
    }
  }

  private _options: IEventStreamOptions;
  private _socket: WebSocket | null = null;
  private _lastSeq: number;
  private _delay: number;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _disposed = false;
  private _received = new Signal<this, StreamPart[]>(this);
}
