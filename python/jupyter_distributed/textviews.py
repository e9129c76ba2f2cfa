"""Plain-text views for the line magic: cluster status, run history, logs."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .backends import get_backend
from .collapse import ranks_text
from .errors import NotFound
from .events import StacksEvent
from .global_batch import batch_warning
from .history.store import Store
from .interface import RankInfo
from .protocol.stacks import RankStacks
from .redact import mask_text
from .session import Session
from .settings import Settings
from .spec import Spec
from .sweeps import label

SHOWN_COMBINATIONS = 20
RANK_LINES = 64  # ranks listed one per line by status; above, one line per node (as the panel)


def _age(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{max(0.0, time.time() - t):.1f}s ago"


def status(session: Session, every: bool = False) -> str:
    """The live clusters: each rank's line, or above ``RANK_LINES`` ranks (unless ``every``)
    one line per node, with the ranks not in its common state named after it."""
    from .cluster.zygote import servers_text  # (here: loading the magics loads no engine)

    servers = servers_text()
    if not session.live:
        none = "No cluster is running. A %%distributed cell starts one."
        return f"{none}\n{servers}" if servers else none
    out: list[str] = []
    for backend, live in session.live.items():
        c = live.cluster
        layout = live.spec.layout
        state = "alive" if c.alive else f"lost: {c.lost}"
        out.append(
            f"cluster {c.id} ({backend}): {layout.world_size} rank(s), "
            f"strategy {layout.strategy.value}, {state}"
        )
        peers = c.peer_count()
        if peers is not None:
            through = f" (through {c.relays} node relay(s))" if c.relays else ""
            if c.aggregators:
                through = f" (through {c.aggregators} aggregator(s) above {c.relays} node relays)"
            out.append(f"  kernel connections to the ranks: {peers}{through}")
        ranks = c.ranks()
        out += rank_lines(ranks) if every or len(ranks) <= RANK_LINES else node_lines(ranks)
    return "\n".join([*out, servers] if servers else out)


def rank_lines(ranks: Sequence[RankInfo]) -> list[str]:
    out = [f"  {'rank':>4}  {'host':<16} {'pid':>7}  {'state':<9} dp pp tp  role    last seen"]
    for r in ranks:
        k = r.coords
        out.append(
            f"  {r.rank:>4}  {r.host[:16]:<16} {r.pid or '-':>7}  {r.state:<9} "
            f"{k.data_parallel:>2} {k.pipeline_stage:>2} {k.tensor_parallel:>2}  "
            f"{k.role.value:<7} {_age(r.last_seen)}"
        )
    return out


def node_lines(ranks: Sequence[RankInfo]) -> list[str]:
    """``node 3  host-a  ranks 24-31  8 idle  last seen 0.2s ago`` per node (the oldest of its
    ranks' last words), then its ranks in another state than most of them, each on its own."""
    nodes: dict[int, list[RankInfo]] = {}
    for r in ranks:
        nodes.setdefault(r.coords.node_rank, []).append(r)
    out = [f"  {'node':>4}  {'host':<16} {'ranks':<12} states (%distributed status --ranks: each)"]
    for node, members in sorted(nodes.items()):
        states = Counter(r.state for r in members)
        common = states.most_common(1)[0][0]
        seen = [r.last_seen for r in members if r.last_seen is not None]
        counts = " · ".join(f"{n} {state}" for state, n in states.most_common())
        out.append(
            f"  {node:>4}  {members[0].host[:16]:<16} {ranks_text([r.rank for r in members]):<12} "
            f"{counts}  last seen {_age(min(seen) if seen else None)}"
        )
        out += [f"        rank {r.rank}: {r.state}" for r in members if r.state != common]
    return out


def dry_run(session: Session, spec: Spec) -> str:
    """``--dry-run``: the plan, and for a sweep its combinations (the first one's plan); URL
    passwords and secret ``-x NAME=value`` are masked wherever a backend shows them."""
    if spec.sweep is None:
        return mask_text(session.plan(spec).render())
    combos = spec.sweep.combinations()
    parallel = get_backend(spec.backend).sweep_parallel(spec)
    head = [
        f"sweep:        {len(combos)} combination(s), {parallel} at a time, each on its own ranks"
    ]
    head += [f"  {label(c)}" for c in combos[:SHOWN_COMBINATIONS]]
    if len(combos) > SHOWN_COMBINATIONS:
        head.append(f"  ... {len(combos) - SHOWN_COMBINATIONS} more")
    first = replace(spec, sweep=None, params=combos[0])
    return mask_text(
        "\n".join([*head, f"plan of {label(combos[0])}:", session.plan(first).render()])
    )


def runs(store: Store, limit: int = 20) -> str:
    records = store.runs(limit=limit)
    if not records:
        return "No runs recorded yet."
    out = [
        f"{'run':<24} {'backend':<9} {'ranks':>5}  {'state':<11} {'started':<19} "
        f"{'duration':>9}  cell"
    ]
    for r in records:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        duration = f"{(r.ended or time.time()) - r.started:.2f}s"
        first = (r.source.strip().splitlines() or [""])[0][:40]
        out.append(
            f"{r.id:<24} {r.backend:<9} {len(r.ranks):>5}  {r.state.value:<11} "
            f"{started:<19} {duration:>9}  {first}"
        )
        if r.sweep_id:
            swept = " ".join(f"{k}={v!r}" for k, v in r.summary.get("sweep", {}).items())
            out.append(f"{'':<24} {r.sweep_id}: {swept}")
        if r.message:
            out.append(f"{'':<24} {r.message}")
        if isinstance(r.summary.get("pruned"), dict):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.summary["pruned"].get("t", 0)))
            out.append(f"{'':<24} log lines pruned {when} (the history's size budget)")
        if "global_batch" in r.summary:
            s = r.summary
            out.append(
                f"{'':<24} global batch {s['global_batch']} = {s['per_rank_batch']} per "
                f"rank × {s['data_parallel_degree']} data-parallel"
            )
            warning = batch_warning(s)
            if warning:
                out.append(f"{'':<24} warning: {warning}")
        if "throughput" in r.summary:
            out.append(f"{'':<24} {_rate_line(r.summary)}")
    return "\n".join(out)


def _rate_line(summary: dict[str, Any]) -> str:
    """A run's samples/s as its summary holds it (:mod:`.rates`: first report to last)."""
    total = float(summary["throughput"])
    degree = summary.get("data_parallel_degree")
    if "rank_rate" not in summary or not degree:
        return f"{total:.1f} samples/s in total, first report to last"
    return (
        f"{total:.1f} samples/s in total = {float(summary['rank_rate']):.1f} per rank × "
        f"{degree} data-parallel, first report to last"
    )


def logs(
    store: Store,
    run_id: str,
    rank: int | None = None,
    search: str | None = None,
    limit: int = 10_000,
) -> str:
    record = store.run(run_id)
    if record is None:
        raise NotFound(f"no run {run_id!r}; %distributed runs lists them")
    lines = store.logs(
        record.id, ranks=None if rank is None else [rank], search=search, limit=limit
    )
    out = [
        f"[rank {ln.rank}{' stderr' if ln.stream == 'stderr' else ''}] {ln.text}" for ln in lines
    ]
    return "\n".join(out) if out else f"run {record.id}: no output lines match"


def settings(configurables: list[Settings]) -> str:
    """``%distributed config``: each setting, its effective value and where it came from."""
    rows = [row for c in configurables for row in c.sources()]
    width = max((len(name) for name, _, _ in rows), default=0)
    return "\n".join(f"{name:<{width}}  {value}  ({where})" for name, value, where in rows)


STACKS_WAIT = 5.0  # seconds for the kernel running a run to answer a stacks request


def stacks(session: Session, run_id: str | None, rank: int | None) -> str:
    """``%distributed stacks [RUN] [--rank R]``: this kernel's live ranks, or a run's, which may
    be running in another kernel (asked through the history, as the panel does)."""
    if run_id is None:
        return "\n\n".join(session.stacks(rank)) or "no cluster is running"
    store = session.store
    run = store.run(run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r} in the history")
    if run.state.finished:
        old = store.stacks(run.id)
        if not old:
            return f"run {run.id} ended ({run.state.value}) without a stack snapshot"
        return _snapshot_text(old[-1][1], rank, f"run {run.id} ended; its last stacks:")
    after = old[-1][0] if (old := store.stacks(run.id)) else 0
    store.request_control(run.id, "stacks", rank)
    deadline = time.monotonic() + STACKS_WAIT
    while time.monotonic() < deadline:
        new = store.stacks(run.id, after)
        if new:
            return _snapshot_text(new[-1][1], rank, f"run {run.id}:")
        time.sleep(0.05)
    return f"run {run.id}: its kernel did not answer within {STACKS_WAIT:.0f}s"


def _snapshot_text(event: StacksEvent, rank: int | None, head: str) -> str:
    if rank is None:
        return f"{head}\n{event.diagnosis}"
    data = event.ranks.get(rank)
    if data is None:
        return f"{head} no stack of rank {rank}"
    lines = RankStacks.from_json(data).format()
    return "\n".join([f"{head} rank {rank}:", *lines])
