/**
 * Wire types shared with the Python side.
 *
 * Each interface here mirrors a JSON document that the server extension
 * (`python/jupyter_distributed/server/`) sends, field for field, with the
 * Python snake_case names kept. None are defined yet: the run, rank and event
 * types arrive together with the REST endpoints that produce them.
 */

export {};
