"""HTTP handlers: thin, authenticated and authorized, JSON in and out.

Every route asks the server's ``Authorizer`` about the resource :data:`AUTH_RESOURCE`: ``read``
for the GETs, the WebSocket and SSE, ``write`` for cancel, stop and delete (JupyterHub RBAC and
read-only sharing rely on it). Each handler names one :class:`~.api.History` call;
:meth:`BaseHandler.answer` runs it off the event loop and is the one place that maps our errors
to HTTP statuses (a store that cannot be read is 503, with what to do).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado import iostream, web, websocket

from ..errors import StoreError
from .api import ApiError, History, Query, Unavailable
from .notebooks import kernel_notebooks
from .stream import Tail, encode, last_seq, pump
from .wire import StreamMessage

SETTINGS_KEY = "jupyter_distributed"

#: The resource every route is authorized against (``read`` or ``write``).
AUTH_RESOURCE = "distributed"

#: Seconds between SSE keep-alive comments (proxies drop idle connections).
KEEPALIVE = 15.0


Method = TypeVar("Method", bound=Callable[..., Awaitable[None]])


def allowed(action: str) -> Callable[[Method], Method]:
    """Jupyter's ``@authorized(action)`` on :data:`AUTH_RESOURCE`, typed."""
    return cast(Callable[[Method], Method], authorized(action, AUTH_RESOURCE))


def _failure(exc: ApiError | StoreError) -> ApiError:
    return Unavailable(str(exc)) if isinstance(exc, StoreError) else exc


def _tail(settings: dict[str, Any]) -> Tail:
    tail: Tail | None = settings[SETTINGS_KEY]["tail"]
    if tail is None:  # the store could not be opened
        history: History = settings[SETTINGS_KEY]["history"]
        raise Unavailable(history.problem)
    return tail


class BaseHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def history(self) -> History:
        history: History = self.settings[SETTINGS_KEY]["history"]
        return history

    def query(self) -> Query:
        return Query({k: self.get_query_arguments(k) for k in self.request.query_arguments})

    async def notebooks(self) -> dict[str, str]:
        """Kernel id -> the notebook its session has open now: one listing of the sessions."""
        return await kernel_notebooks(self.session_manager, self.kernel_manager.root_dir)

    async def answer(self, call: Callable[..., object], *args: Any, status: int = 200) -> None:
        reply: object
        try:
            reply = await asyncio.to_thread(call, *args)
        except (ApiError, StoreError) as exc:
            error = _failure(exc)
            self.set_status(error.status)
            reply = {"message": error.message}
        else:
            self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(reply))


class VersionHandler(BaseHandler):
    """``GET version``: the package version and the API version."""

    @web.authenticated
    @allowed("read")
    async def get(self) -> None:
        await self.answer(self.history.version)


class RunsHandler(BaseHandler):
    @web.authenticated
    @allowed("read")
    async def get(self) -> None:
        await self.answer(self.history.runs, self.query(), await self.notebooks())


class RunHandler(BaseHandler):
    @web.authenticated
    @allowed("read")
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.run, run_id, await self.notebooks())

    @web.authenticated
    @allowed("write")
    async def delete(self, run_id: str) -> None:
        await self.answer(self.history.delete, run_id)


class LogsHandler(BaseHandler):
    @web.authenticated
    @allowed("read")
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.logs, run_id, self.query())


class MetricsHandler(BaseHandler):
    @web.authenticated
    @allowed("read")
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.metrics, run_id, self.query())


class DisplayHandler(BaseHandler):
    """``GET runs/<id>/displays/<seq>``: the bundle stored as display ``seq`` of that run."""

    @web.authenticated
    @allowed("read")
    async def get(self, run_id: str, seq: str) -> None:
        await self.answer(self.history.display, run_id, seq)


class CancelHandler(BaseHandler):
    @web.authenticated
    @allowed("write")
    async def post(self, run_id: str) -> None:
        await self.answer(self.history.cancel, run_id, status=202)


class StacksHandler(BaseHandler):
    @web.authenticated
    @allowed("read")
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.stacks, run_id, self.query())

    @web.authenticated
    @allowed("write")
    async def post(self, run_id: str) -> None:
        await self.answer(self.history.request_stacks, run_id, self.query(), status=202)


class StopHandler(BaseHandler):
    @web.authenticated
    @allowed("write")
    async def post(self, cluster_id: str) -> None:
        await self.answer(self.history.stop, cluster_id, status=202)


class EventsHandler(BaseHandler):
    """``GET events?after=<seq>&run=<id>``: the same stream as Server-Sent Events, one SSE
    message per batch whose ``id`` is the batch's last seq, so a browser's ``EventSource``
    resumes from ``Last-Event-ID`` on reconnect."""

    _closed = False

    @web.authenticated
    @allowed("read")
    async def get(self) -> None:
        query = self.query()
        try:
            tail = _tail(self.settings)
            after = query.integer("after", None, 0)
            resume = self.request.headers.get("Last-Event-ID")
            if resume:
                after = Query({"Last-Event-ID": [resume]}).integer("Last-Event-ID", None, 0)
        except ApiError as exc:
            self.set_status(exc.status)
            self.finish(json.dumps({"message": exc.message}))
            return
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # nginx: pass events through at once
        keepalive = asyncio.create_task(self._keepalive())
        try:
            with contextlib.suppress(iostream.StreamClosedError):
                await self._write(
                    ": connected\n\n"
                )  # the headers go out now, not at the first event
                run, nodes = query.text("run") or None, query.text("format") == "nodes"
                await pump(tail, after, run, self._send, self._is_closed, nodes)
        except StoreError as exc:  # after the headers: say so as an event, then end
            message = json.dumps({"message": str(exc), "status": Unavailable.status})
            with contextlib.suppress(iostream.StreamClosedError):
                await self._write(f"event: failure\ndata: {message}\n\n")
        finally:
            keepalive.cancel()

    async def _keepalive(self) -> None:
        with contextlib.suppress(iostream.StreamClosedError):
            while not self._closed:
                await asyncio.sleep(KEEPALIVE)
                await self._write(": keep-alive\n\n")

    async def _write(self, chunk: str) -> None:
        self.write(chunk)
        await self.flush()

    async def _send(self, message: StreamMessage) -> None:
        await self._write(f"id: {last_seq(message)}\ndata: {encode(message)}\n\n")

    def _is_closed(self) -> bool:
        return self._closed

    def on_connection_close(self) -> None:
        self._closed = True


class StreamHandler(JupyterHandler, websocket.WebSocketHandler):
    """``GET stream?after=<seq>&run=<id>`` (WebSocket): see :mod:`.stream`."""

    _task: asyncio.Task[None] | None = None
    auth_resource = AUTH_RESOURCE

    @ws_authenticated
    @allowed("read")
    async def get(self, *args: Any, **kwargs: Any) -> None:
        query = Query({k: self.get_query_arguments(k) for k in self.request.query_arguments})
        try:
            self._tail = _tail(self.settings)
            self._after = query.integer("after", None, 0)
        except ApiError as exc:
            raise web.HTTPError(exc.status, exc.message) from None
        self._run = query.text("run") or None
        self._nodes = query.text("format") == "nodes"  # rows batched per node (nodebatch.py)
        await super().get(*args, **kwargs)

    def open(self, *args: str, **kwargs: str) -> None:
        self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            await pump(self._tail, self._after, self._run, self._send, self._is_closed, self._nodes)
        except StoreError as exc:
            self.close(1011, str(exc)[:120])  # a close reason is at most 123 bytes

    async def _send(self, message: StreamMessage) -> None:
        await self.write_message(encode(message))

    def _is_closed(self) -> bool:
        return self.ws_connection is None or self.ws_connection.is_closing()

    def on_message(self, message: str | bytes) -> None:
        pass  # the client only listens

    def on_close(self) -> None:
        if self._task is not None:
            self._task.cancel()
