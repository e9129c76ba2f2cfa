"""The inline view (``%%distributed --widget``): a live panel under the cell for front-ends
without the JupyterLab side panel (VS Code, classic notebook, Colab).

A rank-state strip, progress, and a throughput plot (samples/s per rank from
``report(samples=N)``), above the usual ``[rank N]`` output lines. Plain ipywidgets whose last
state stays in the saved notebook; the plot is an output holding a plotly figure (JSON, drawn by
the front-end's plotly renderer) with an SVG picture of it for front-ends without one.
Widgets are updated a few times a second at most, on the kernel's main thread.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from typing import TextIO

import ipywidgets as widgets
from IPython.display import display

from .display import CellView
from .events import ErrorEvent, Event, MetricEvent, RankEvent
from .liveplot import Throughput

REFRESH_EVERY = 0.25  # seconds between widget updates
PLOT_EVERY = 1.0  # seconds between plot updates
COLORS = {
    "starting": "#bbb",
    "running": "#1f77b4",
    "done": "#2ca02c",
    "failed": "#d62728",
    "interrupted": "#ff7f0e",
    "exited": "#7f7f7f",
}
FINISHED = ("done", "failed", "interrupted", "exited")


class WidgetView(CellView):
    """A :class:`CellView` that also draws the run in widgets under the cell."""

    def __init__(
        self,
        ranks: Sequence[int],
        run_id: str = "",
        out: TextIO | None = None,
        err: TextIO | None = None,
        quiet: bool = False,
    ) -> None:
        super().__init__(run_id, out, err, quiet)
        self.states: dict[int, str] = dict.fromkeys(ranks, "starting")
        self.progress_values: dict[int, float] = {}
        self.throughput = Throughput()
        self.started = time.time()
        self._changed = True
        self._refreshed = self._plotted = 0.0
        self._plot_dirty = False
        self.header = widgets.HTML()
        self.strip = widgets.HTML()
        self.progress = widgets.FloatProgress(min=0.0, max=1.0, value=0.0, description="progress")
        self.plot = widgets.Output()
        self.box = widgets.VBox([self.header, self.strip, self.progress, self.plot])
        self.refresh(force=True)
        display(self.box)  # type: ignore[no-untyped-call]

    # -- RunView -------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        super().on_event(event)
        if isinstance(event, RankEvent):
            self.states[event.rank] = event.state.value
            self._changed = True
        elif isinstance(event, ErrorEvent) and event.rank in self.states:
            self.states[event.rank] = "failed"
            self._changed = True
        elif isinstance(event, MetricEvent):
            samples = event.values.get("samples")
            if samples is not None:
                self.throughput.add(event.rank, event.t, samples)
                self._plot_dirty = True
            if "progress" in event.values:
                self.progress_values[event.rank] = event.values["progress"]
                self._changed = True
        self.refresh()

    def flush(self) -> None:
        super().flush()
        self.refresh()

    def finish(self) -> None:
        super().finish()
        self.refresh(force=True, final=True)

    # -- drawing -------------------------------------------------------------------------

    def refresh(self, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._refreshed < REFRESH_EVERY:
            return
        self._refreshed = now
        if self._changed or force:
            self._changed = False
            self._draw_states(final)
        if self._plot_dirty and (force or now - self._plotted >= PLOT_EVERY):
            self._plotted = now
            self._plot_dirty = False
            self._draw_plot()

    def _draw_states(self, final: bool) -> None:
        counts: dict[str, int] = {}
        for state in self.states.values():
            counts[state] = counts.get(state, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        rate = self.throughput.latest()
        elapsed = time.time() - self.started
        self.header.value = (
            f"<b>run {html.escape(self.run_id)}</b> · {len(self.states)} rank(s) · "
            f"{html.escape(summary)} · {elapsed:.0f}s"
            + (f" · {rate:.4g} samples/s" if rate else "")
        )
        self.strip.value = "".join(
            f'<span title="rank {r}: {s}" data-rank="{r}" data-state="{s}" style="display:'
            f"inline-block;width:10px;height:10px;margin:1px;background:{COLORS.get(s, '#bbb')}"
            f'"></span>'
            for r, s in sorted(self.states.items())
        )
        finished = sum(s in FINISHED for s in self.states.values())
        if self.progress_values and not final:
            value = sum(self.progress_values.values()) / max(len(self.states), 1)
        else:
            value = finished / max(len(self.states), 1)
        self.progress.value = min(max(value, 0.0), 1.0)
        if final or finished == len(self.states):
            failed = any(s in ("failed", "interrupted") for s in self.states.values())
            self.progress.bar_style = "danger" if failed else "success"
            self.progress.description = "failed" if failed else "done"

    def _draw_plot(self) -> None:
        bundle = {
            "application/vnd.plotly.v1+json": self.throughput.figure(),
            "text/html": self.throughput.svg(),
            "text/plain": f"{self.throughput.latest():.4g} samples/s",
        }
        self.plot.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)
