"""The inline view (``%%distributed --widget``): the run live under the cell, drawn by the panel.

Following anywidget's split, Python owns the state and one front-end implementation owns the
view: :class:`RunWidget` holds the run, its ranks and its events in the wire format (the JSON of
``events.py`` and ``records.py`` that the server sends the side panel), and the lab extension's
``RunView`` (``labextension/src/widget.tsx``) folds and draws them with the panel's own code: the
same rank tiles, straggler rule and throughput plots. The state is kept in the saved notebook.

Widgets are synced a few times a second at most, on the kernel's main thread; the ``[rank N]``
output lines stay under the cell as without ``--widget``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Collection, Sequence
from typing import Any, TextIO

import ipywidgets as widgets
import traitlets
from IPython.display import display

from . import __version__
from .display import CellView
from .events import DisplayEvent, Event, MetricEvent, OutputEvent
from .history.records import RankRecord, RunRecord

SYNC_EVERY = 0.25  # seconds between two syncs of the widget's state
MAX_EVENTS = 5000  # metric events kept for the plots (the oldest go first); others are all kept
MODULE_NAME = "jupyter-distributed"  # the lab extension's widget module (widget.tsx)


class RunWidget(widgets.DOMWidget):  # type: ignore[misc]
    """A run in the wire format; the lab extension's ``RunView`` draws it."""

    _model_name = traitlets.Unicode("RunModel").tag(sync=True)
    _view_name = traitlets.Unicode("RunView").tag(sync=True)
    _model_module = traitlets.Unicode(MODULE_NAME).tag(sync=True)
    _view_module = traitlets.Unicode(MODULE_NAME).tag(sync=True)
    _model_module_version = traitlets.Unicode(f"^{__version__}").tag(sync=True)
    _view_module_version = traitlets.Unicode(f"^{__version__}").tag(sync=True)
    run = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)  # RunJSON
    ranks: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)  # [RankJSON]
    # [StreamItem]: {"seq": n, "event": ...}
    events: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)


class WidgetView(CellView):
    """A :class:`CellView` that also shows the run in a :class:`RunWidget` under the cell."""

    def __init__(
        self,
        ranks: Sequence[int],
        run_id: str = "",
        out: TextIO | None = None,
        err: TextIO | None = None,
        quiet: bool = False,
        display_ranks: Collection[int] | None = None,
        output_ranks: Collection[int] | None = None,
        collapse: bool = True,
        backend: str = "",
        source: str = "",
    ) -> None:
        super().__init__(run_id, out, err, quiet, display_ranks, output_ranks, collapse, ranks)
        self.rank_ids = list(ranks)
        self.backend, self.source = backend, source  # for the widget's title
        self.started = time.time()
        self.widget = RunWidget()
        self._events: list[dict[str, Any]] = []  # every rank, run and error event
        self._metrics: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        self._seq = 0
        self._synced = 0.0
        self._unsynced = False
        display(self.widget)  # type: ignore[no-untyped-call]

    # -- RunView -------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        super().on_event(event)
        if isinstance(event, OutputEvent | DisplayEvent):
            return  # the lines and displays are under the cell already
        if not self.run_id:
            self.run_id = event.run_id
        self._seq += 1
        item = {"seq": self._seq, "event": event.to_json()}
        (self._metrics if isinstance(event, MetricEvent) else self._events).append(item)
        self._unsynced = True
        self.sync()

    def flush(self) -> None:
        super().flush()
        self.sync()

    def finish(self, unrecorded: int = 0) -> None:
        super().finish(unrecorded)
        self.sync(force=True)

    # -- state ---------------------------------------------------------------------------

    def sync(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self._unsynced or not self.run_id or (not force and now - self._synced < SYNC_EVERY):
            return
        self._synced = now
        self._unsynced = False
        if self.widget.run is None:
            run = RunRecord(
                self.run_id,
                self.backend,
                len(self.rank_ids),
                self.rank_ids,
                source=self.source,
                started=self.started,
            )
            ranks = [
                RankRecord(r, "", None, "starting", {}, self.started, None).to_json()
                for r in self.rank_ids
            ]
            with self.widget.hold_sync():
                self.widget.run = run.to_json()
                self.widget.ranks = ranks
        items = sorted([*self._events, *self._metrics], key=lambda item: int(item["seq"]))
        self.widget.events = items
