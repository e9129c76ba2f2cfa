/**
 * The server extension's REST API: one method per endpoint, URLs built from
 * JupyterLab's server settings (base URL, token), errors as one-line messages.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { API_PATH, API_VERSION, type DisplayReply, type RunReply, type RunsReply } from './wire';

/**
 * A request to the server extension failed; `message` says what happened.
 */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number | null
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export class DistributedApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  /** Newest first; `before` pages by start time. */
  async runs(limit = 50, before?: number): Promise<RunsReply> {
    const query: Record<string, string> = { limit: String(limit) };
    if (before !== undefined) {
      query.before = String(before);
    }
    const reply = await this.request<RunsReply>('runs', query);
    if (reply.version !== API_VERSION) {
      throw new ApiError(
        `the server speaks API version ${reply.version}, this panel ${API_VERSION}: ` +
          'install matching versions of jupyter-distributed and reload the page',
        null
      );
    }
    return reply;
  }

  run(id: string): Promise<RunReply> {
    return this.request<RunReply>(`runs/${encodeURIComponent(id)}`);
  }

  /** The rich display recorded as event `seq` of a run (the seq of its log line). */
  display(runId: string, seq: number): Promise<DisplayReply> {
    return this.request<DisplayReply>(`runs/${encodeURIComponent(runId)}/displays/${Math.trunc(seq)}`);
  }

  async cancel(runId: string): Promise<void> {
    await this.request<unknown>(`runs/${encodeURIComponent(runId)}/cancel`, {}, 'POST');
  }

  /** Ask the kernel running the run for every rank's stacks (or `rank`'s); they arrive on the stream. */
  async requestStacks(runId: string, rank?: number): Promise<void> {
    const query: Record<string, string> = rank === undefined ? {} : { rank: String(rank) };
    await this.request<unknown>(`runs/${encodeURIComponent(runId)}/stacks`, query, 'POST');
  }

  /** Delete a finished run and all it holds; the server refuses a running one (409, with why). */
  async deleteRun(runId: string): Promise<void> {
    await this.request<unknown>(`runs/${encodeURIComponent(runId)}`, {}, 'DELETE');
  }

  async stopCluster(clusterId: string): Promise<void> {
    await this.request<unknown>(`clusters/${encodeURIComponent(clusterId)}/stop`, {}, 'POST');
  }

  /**
   * The URL of the live event stream of one run, resuming after `after`; the
   * token is appended where the settings say so (browsers cannot send headers
   * on a WebSocket). It asks for rows batched per node (`format=nodes`); a
   * server before them ignores that and sends an object per event, read alike.
   */
  streamUrl(runId: string, after: number): string {
    const url =
      URLExt.join(this.settings.wsUrl, API_PATH, 'stream') +
      URLExt.objectToQueryString({ after: String(after), run: runId, format: 'nodes' });
    const token = this.settings.token;
    if (this.settings.appendToken && token) {
      return `${url}&token=${encodeURIComponent(token)}`;
    }
    return url;
  }

  private async request<T>(
    path: string,
    query: Record<string, string> = {},
    method: 'GET' | 'POST' | 'DELETE' = 'GET'
  ): Promise<T> {
    const url = URLExt.join(this.settings.baseUrl, API_PATH, path) + URLExt.objectToQueryString(query);
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, { method }, this.settings);
    } catch (error) {
      throw new ApiError(`cannot reach the Jupyter server (${String(error)})`, null);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new ApiError(`${method} ${path} failed: ${errorMessage(text, response)}`, response.status);
    }
    return (text ? JSON.parse(text) : {}) as T;
  }
}

function errorMessage(text: string, response: Response): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; reason?: unknown };
    if (typeof body.message === 'string' && body.message) {
      return body.message;
    }
  } catch {
    // Not JSON: fall back to the status line.
  }
  return `${response.status} ${response.statusText}`.trim();
}
