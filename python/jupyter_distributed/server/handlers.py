"""HTTP handlers: thin, authenticated, JSON in and out.

Each handler names one :class:`~.api.History` call; :meth:`BaseHandler.answer` runs it off the
event loop and is the one place that maps our errors to HTTP statuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado import iostream, web, websocket

from .api import ApiError, BadRequest, History, Query
from .stream import Tail, encode, pump
from .wire import StreamMessage

SETTINGS_KEY = "jupyter_distributed"


class BaseHandler(APIHandler):
    @property
    def history(self) -> History:
        history: History = self.settings[SETTINGS_KEY]["history"]
        return history

    def query(self) -> Query:
        return Query({k: self.get_query_arguments(k) for k in self.request.query_arguments})

    async def answer(self, call: Callable[..., object], *args: Any, status: int = 200) -> None:
        reply: object
        try:
            reply = await asyncio.to_thread(call, *args)
        except ApiError as exc:
            self.set_status(exc.status)
            reply = {"message": exc.message}
        else:
            self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(reply))


class VersionHandler(BaseHandler):
    """``GET version``: the package version and the API version."""

    @web.authenticated
    async def get(self) -> None:
        await self.answer(self.history.version)


class RunsHandler(BaseHandler):
    @web.authenticated
    async def get(self) -> None:
        await self.answer(self.history.runs, self.query())


class RunHandler(BaseHandler):
    @web.authenticated
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.run, run_id)


class LogsHandler(BaseHandler):
    @web.authenticated
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.logs, run_id, self.query())


class MetricsHandler(BaseHandler):
    @web.authenticated
    async def get(self, run_id: str) -> None:
        await self.answer(self.history.metrics, run_id, self.query())


class CancelHandler(BaseHandler):
    @web.authenticated
    async def post(self, run_id: str) -> None:
        await self.answer(self.history.cancel, run_id, status=202)


class StopHandler(BaseHandler):
    @web.authenticated
    async def post(self, cluster_id: str) -> None:
        await self.answer(self.history.stop, cluster_id, status=202)


class EventsHandler(BaseHandler):
    """``GET events?after=<seq>&run=<id>``: the same stream as Server-Sent Events, one SSE
    message per batch whose ``id`` is the batch's last seq, so a browser's ``EventSource``
    resumes from ``Last-Event-ID`` on reconnect."""

    _closed = False

    @property
    def tail(self) -> Tail:
        tail: Tail = self.settings[SETTINGS_KEY]["tail"]
        return tail

    @web.authenticated
    async def get(self) -> None:
        query = self.query()
        try:
            after = query.integer("after", None, 0)
            resume = self.request.headers.get("Last-Event-ID")
            if resume:
                after = Query({"Last-Event-ID": [resume]}).integer("Last-Event-ID", None, 0)
        except BadRequest as exc:
            self.set_status(exc.status)
            self.finish(json.dumps({"message": exc.message}))
            return
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        with contextlib.suppress(iostream.StreamClosedError):
            await pump(self.tail, after, query.text("run") or None, self._send, self._is_closed)

    async def _send(self, message: StreamMessage) -> None:
        self.write(f"id: {message['events'][-1]['seq']}\ndata: {encode(message)}\n\n")
        await self.flush()

    def _is_closed(self) -> bool:
        return self._closed

    def on_connection_close(self) -> None:
        self._closed = True


class StreamHandler(JupyterHandler, websocket.WebSocketHandler):
    """``GET stream?after=<seq>&run=<id>`` (WebSocket): see :mod:`.stream`."""

    _task: asyncio.Task[None] | None = None

    @property
    def tail(self) -> Tail:
        tail: Tail = self.settings[SETTINGS_KEY]["tail"]
        return tail

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        query = Query({k: self.get_query_arguments(k) for k in self.request.query_arguments})
        try:
            self._after = query.integer("after", None, 0)
        except BadRequest as exc:
            raise web.HTTPError(400, exc.message) from None
        self._run = query.text("run") or None
        await super().get(*args, **kwargs)

    def open(self, *args: str, **kwargs: str) -> None:
        self._task = asyncio.create_task(
            pump(self.tail, self._after, self._run, self._send, self._is_closed)
        )

    async def _send(self, message: StreamMessage) -> None:
        await self.write_message(encode(message))

    def _is_closed(self) -> bool:
        return self.ws_connection is None or self.ws_connection.is_closing()

    def on_message(self, message: str | bytes) -> None:
        pass  # the client only listens

    def on_close(self) -> None:
        if self._task is not None:
            self._task.cancel()
