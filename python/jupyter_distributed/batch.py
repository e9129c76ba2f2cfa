"""The effective global batch of a run, from the ``samples`` its ranks ``report()``.

Global batch = samples per step on one rank × data-parallel degree. When it changes between two
runs of the same cell, the learning rate usually has to change with it (linear scaling rule).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .spec import Layout
from .store import Store

_PAGE = 10_000
_HISTORY = 200


def per_rank_batch(store: Store, run_id: str) -> int | None:
    """The most frequent ``samples`` value the run's ranks reported per ``report()`` call."""
    counts: Counter[float] = Counter()
    after = 0
    while True:
        page = store.metrics(run_id, after=after, limit=_PAGE)
        for _, event in page:
            value = event.values.get("samples")
            if value is not None and value > 0:
                counts[value] += 1
        if len(page) < _PAGE:
            break
        after = page[-1][0]
    if not counts:
        return None
    return int(counts.most_common(1)[0][0])


def record_global_batch(store: Store, run_id: str, source: str, layout: Layout) -> str | None:
    """Store the run's global batch in its summary; return a warning when it differs from
    the previous run of the same cell source."""
    per_rank = per_rank_batch(store, run_id)
    if per_rank is None:
        return None
    degree = layout.data_parallel_degree
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
            if r.id != run_id and r.source == source and "global_batch" in r.summary
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
