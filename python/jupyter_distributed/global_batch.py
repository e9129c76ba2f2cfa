"""The effective global batch of a run, from the ``samples`` its ranks ``report()``.

Global batch = samples per step on one rank × data-parallel degree. When it changes between two
runs of the same cell, the learning rate usually has to change with it (linear scaling rule).

:class:`GlobalBatch` watches the metric events as they pass the run's recorder, so nothing is
read back from the store after a cell.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .events import MetricEvent, Recorded
from .history.store import Store
from .layout import Layout

_HISTORY = 200


class GlobalBatch:
    """Counts each ``samples`` value the run's ranks report; at the end of the run stores the
    global batch in the run's summary and warns when it changed since the same cell's last run."""

    def __init__(self, source: str, layout: Layout) -> None:
        self.source, self.layout = source, layout
        self.counts: Counter[float] = Counter()

    def on_event(self, event: Recorded) -> None:
        if isinstance(event, MetricEvent):
            value = event.values.get("samples")
            if value is not None and value > 0:
                self.counts[value] += 1

    @property
    def per_rank(self) -> int | None:
        """The most frequent ``samples`` value per ``report()`` call, if any was reported."""
        return int(self.counts.most_common(1)[0][0]) if self.counts else None

    def finish(self, store: Store, run_id: str) -> str | None:
        """Record the run's global batch; return a warning when it changed."""
        per_rank = self.per_rank
        if per_rank is None:
            return None
        degree = self.layout.data_parallel_degree
        batch = per_rank * degree
        values: dict[str, Any] = {
            "global_batch": batch,
            "per_rank_batch": per_rank,
            "data_parallel_degree": degree,
        }
        previous = next(
            (
                r
                for r in store.runs(limit=_HISTORY)
                if r.id != run_id and r.source == self.source and "global_batch" in r.summary
            ),
            None,
        )
        warning = None
        if previous is not None and previous.summary["global_batch"] != batch:
            values.update(
                previous_global_batch=previous.summary["global_batch"], previous_run=previous.id
            )
            warning = batch_warning(values)
        store.update_summary(run_id, **values)
        return warning


def batch_warning(summary: dict[str, Any]) -> str | None:
    if "previous_global_batch" not in summary:
        return None
    return (
        f"global batch changed from {summary['previous_global_batch']} (run "
        f"{summary['previous_run']}) to {summary['global_batch']}: scale the learning rate "
        "with it, or keep the global batch by changing the per-rank batch"
    )
