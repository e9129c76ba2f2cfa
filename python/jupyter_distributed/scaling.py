"""``%distributed compare``: scaling efficiency across runs of the same cell.

Throughput comes from ``report(samples=N)``, as :mod:`.rates` defines it for every view: each
rank's rate is first report to last, and a run's total samples/s is the mean rank rate × its
data-parallel degree. Efficiency against the smallest run compared:
``throughput(n) / (n × throughput(m) / m)``.

A run below the threshold gets a hint from what was measured: stragglers
(:func:`.rates.stragglers` with ``c.Distributed.straggler_threshold``, the panel's rule too),
waiting for data (``report(data_time=...)``), time in collectives when a probe of the run's
cluster (or the newest probe) found slow links, else synchronisation. Stragglers are named
whatever the efficiency.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import NotFound
from .events import MetricEvent, Recorded
from .global_batch import batch_warning
from .history.store import RunRecord, Store
from .layout import Layout
from .rates import STRAGGLER_THRESHOLD as STRAGGLER
from .rates import RankRate, stragglers, total

DATA_WAIT = 0.2  # share of the time spent waiting for data that is worth a hint
SLOW_LINK_GBS = 1.0  # a probe's slowest link group below this is "slow"
_PAGE = 10_000


@dataclass
class RunRate:
    run: RunRecord
    dp_degree: int
    rank_rates: dict[int, float] = field(default_factory=dict)
    data_share: float | None = None  # mean share of each rank's time in data_time

    @property
    def throughput(self) -> float:
        """The run's total samples/s (one rank per data-parallel replica)."""
        return total(self.rank_rates, self.dp_degree)


class Tally:
    """Per rank: its first-to-last rate (:class:`.rates.RankRate`) and the summed ``data_time``.
    O(ranks) memory however long a run reports."""

    def __init__(self) -> None:
        self.ranks: dict[int, RankRate] = {}
        self.data_time: dict[int, float] = {}
        self.final: dict[str, float] = {}  # the last value of every metric, any rank

    def add(self, rank: int, t: float, values: dict[str, float]) -> None:
        self.final.update(values)
        if "data_time" in values:
            self.data_time[rank] = self.data_time.get(rank, 0.0) + float(values["data_time"])
        n = values.get("samples")
        if n is not None:
            self.ranks.setdefault(rank, RankRate()).add(t, float(n))

    def rate(self, started: float, dp_degree: int, run: RunRecord) -> RunRate:
        rate = RunRate(run, dp_degree)
        spans: dict[int, float] = {}
        for rank, ranked in self.ranks.items():
            value = ranked.rate
            if value is not None:
                rate.rank_rates[rank] = value
                spans[rank] = ranked.last - started
        shares = [self.data_time[r] / spans[r] for r in self.data_time if spans.get(r)]
        rate.data_share = statistics.fmean(shares) if shares else None
        return rate


def _dp_degree(run: RunRecord) -> int:
    layout = Layout.from_json(run.spec["layout"]) if "layout" in run.spec else None
    return layout.data_parallel_degree if layout else run.world_size


def measure(store: Store, run: RunRecord) -> RunRate:
    tally = Tally()
    after = 0
    while True:
        page = store.metrics(run.id, after=after, limit=_PAGE)
        for seq, ev in page:
            after = seq
            tally.add(ev.rank, ev.t, ev.values)
        if len(page) < _PAGE:
            break
    return tally.rate(run.started, _dp_degree(run), run)


class Throughput:
    """A run's observer: at its end, stores samples/s, each rank's rate and the last value of
    every metric in the run's summary (what the panel's Compare and sweep views show)."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.started = time.time()

    def on_event(self, event: Recorded) -> None:
        if isinstance(event, MetricEvent):
            self.tally.add(event.rank, event.t, event.values)

    def finish(self, store: Store, run_id: str) -> str | None:
        if not (self.tally.ranks or self.tally.final):
            return None  # nothing reported (most cells): the run is not even read
        run = store.run(run_id)
        if run is None:
            return None
        rate = self.tally.rate(self.started, _dp_degree(run), run)
        values: dict[str, Any] = {
            "final": {k: v for k, v in self.tally.final.items() if not k.startswith("sys.")}
        }
        if rate.rank_rates:
            values["throughput"] = rate.throughput  # total: one rank per data-parallel replica
            values["rank_rate"] = rate.throughput / rate.dp_degree  # the mean rank's
            values["rank_rates"] = {str(r): v for r, v in sorted(rate.rank_rates.items())}
        store.update_summary(run_id, **values)
        return None


def same_cell_runs(store: Store, limit: int = 20) -> list[RunRecord]:
    """The runs of the newest cell that reported samples (newest first in the history)."""
    runs = store.runs(limit=200)
    for run in runs:
        if "global_batch" in run.summary:
            return [r for r in runs if r.source == run.source and "global_batch" in r.summary][
                :limit
            ]
    return []


def _probe(store: Store, run: RunRecord) -> dict[str, Any] | None:
    probes = [r for r in store.runs(limit=200) if "probe" in r.summary]
    mine = [r for r in probes if r.cluster_id and r.cluster_id == run.cluster_id]
    chosen = (mine or probes)[:1]
    return chosen[0].summary["probe"] if chosen else None


def hint(rate: RunRate, probe: dict[str, Any] | None, straggler: float = STRAGGLER) -> str:
    """The likely cause of poor scaling, from what was measured."""
    rates = rate.rank_rates
    slow = stragglers(rates, straggler)
    if slow:
        worst = min(rates[r] for r in slow) / statistics.median(rates.values())
        return (
            f"stragglers: rank(s) {slow} ran at {worst:.0%} of the median rank's rate; "
            "the others wait for them at every step (look at their host's load or data)"
        )
    if rate.data_share is not None and rate.data_share > DATA_WAIT:
        return (
            f"waiting for data: ranks spent {rate.data_share:.0%} of their time in data_time; "
            "use more loader workers, prefetching or faster storage"
        )
    if probe is not None:
        groups = probe.get("groups", {})
        slowest = min(
            ((g["bandwidth_gbs"], name) for name, g in groups.items()), default=(None, "")
        )
        if slowest[0] is not None and slowest[0] < SLOW_LINK_GBS:
            return (
                f"time in collectives: probe {probe.get('run_id', '')} measured "
                f"{slowest[0]:.2f} GB/s on {slowest[1]}-node links; use larger per-rank "
                "batches or gradient accumulation, or fewer nodes"
            )
    where = "" if probe is not None else " (%distributed probe measures the links)"
    return f"likely synchronisation or communication overhead{where}"


def compare_rates(store: Store, run_ids: Sequence[str]) -> list[RunRate]:
    """The runs ``%distributed compare`` compares (those named, else the latest cell's runs
    that reported samples), measured, by world size then start."""
    if run_ids:
        runs = []
        for rid in run_ids:
            run = store.run(rid)
            if run is None:
                raise NotFound(f"no run {rid!r}; %distributed runs lists them")
            runs.append(run)
    else:
        runs = same_cell_runs(store)
    return sorted(
        (measure(store, r) for r in runs), key=lambda x: (x.run.world_size, x.run.started)
    )


def compare(
    store: Store,
    run_ids: Sequence[str],
    threshold: float = 0.8,
    straggler: float = STRAGGLER,
    rates: Sequence[RunRate] | None = None,
) -> str:
    """The table of ``%distributed compare``: ``threshold`` is the efficiency below which a run
    gets a hint, ``straggler`` the straggler rule's threshold (:func:`.rates.stragglers`);
    ``rates``: :func:`compare_rates`'s, when measured already."""
    rates = compare_rates(store, run_ids) if rates is None else rates
    if not rates:
        return "No run reported samples yet: call report(samples=N) in a cell, then compare."
    measured = [r for r in rates if r.throughput > 0]
    out = []
    if len({r.run.source for r in rates}) > 1:
        out.append("note: these runs ran different cells; efficiency compares like with like only")
    if not measured:
        return "\n".join([*out, "None of these runs reported samples: call report(samples=N)."])
    base = measured[0]
    per_rank = base.throughput / base.run.world_size
    out.append(
        "samples/s: the run's total (one rank per data-parallel replica) and the mean rank's, "
        "first report to last"
    )
    out.append(
        f"{'run':<24} {'ranks':>5} {'samples/s':>10} {'per rank':>10} {'ideal':>10} "
        f"{'efficiency':>10} {'global batch':>12}"
    )
    for r in rates:
        n = r.run.world_size
        ideal = n * per_rank
        eff = r.throughput / ideal if r.throughput else 0.0
        batch = r.run.summary.get("global_batch", "-")
        shown = f"{eff:.0%}" if r.throughput else "-"
        mean = r.throughput / r.dp_degree
        out.append(
            f"{r.run.id:<24} {n:>5} {r.throughput:>10.1f} {mean:>10.1f} {ideal:>10.1f} "
            f"{shown:>10} {batch!s:>12}"
        )
        slow = stragglers(r.rank_rates, straggler)
        if r.throughput and eff < threshold and r is not base:
            cause = hint(r, _probe(store, r.run), straggler)
            out.append(f"{'':<24} below {threshold:.0%}: {cause}")
        elif slow:
            out.append(f"{'':<24} {hint(r, None, straggler)}")
        warning = batch_warning(r.run.summary)
        if warning:
            out.append(f"{'':<24} warning: {warning}")
    return "\n".join(out)
