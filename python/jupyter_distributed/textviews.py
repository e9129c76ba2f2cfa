"""Plain-text views for the line magic: cluster status, run history, logs."""

from __future__ import annotations

import time

from .batch import batch_warning
from .session import Session
from .store import Store


def _age(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{max(0.0, time.time() - t):.1f}s ago"


def status(session: Session) -> str:
    if not session.live:
        return "No cluster is running. A %%distributed cell starts one."
    out: list[str] = []
    for backend, live in session.live.items():
        c = live.cluster
        layout = live.spec.layout
        state = "alive" if c.alive else f"lost: {c.lost}"
        out.append(
            f"cluster {c.id} ({backend}): {layout.world_size} rank(s), "
            f"strategy {layout.strategy.value}, {state}"
        )
        out.append(
            f"  {'rank':>4}  {'host':<16} {'pid':>7}  {'state':<9} dp pp tp  role    last seen"
        )
        for r in c.ranks():
            k = r.coords
            out.append(
                f"  {r.rank:>4}  {r.host[:16]:<16} {r.pid or '-':>7}  {r.state:<9} "
                f"{k.data_parallel:>2} {k.pipeline_stage:>2} {k.tensor_parallel:>2}  "
                f"{k.role.value:<7} {_age(r.last_seen)}"
            )
    return "\n".join(out)


def runs(store: Store, limit: int = 20) -> str:
    records = store.runs(limit=limit)
    if not records:
        return "No runs recorded yet."
    out = [
        f"{'run':<21} {'backend':<9} {'ranks':>5}  {'state':<11} {'started':<19} "
        f"{'duration':>9}  cell"
    ]
    for r in records:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        duration = f"{(r.ended or time.time()) - r.started:.2f}s"
        first = (r.source.strip().splitlines() or [""])[0][:40]
        out.append(
            f"{r.id:<21} {r.backend:<9} {len(r.ranks):>5}  {r.state.value:<11} "
            f"{started:<19} {duration:>9}  {first}"
        )
        if r.message:
            out.append(f"{'':<21} {r.message}")
        if "global_batch" in r.summary:
            s = r.summary
            out.append(
                f"{'':<21} global batch {s['global_batch']} = {s['per_rank_batch']} per "
                f"rank × {s['data_parallel_degree']} data-parallel"
            )
            warning = batch_warning(s)
            if warning:
                out.append(f"{'':<21} warning: {warning}")
    return "\n".join(out)


def logs(
    store: Store,
    run_id: str,
    rank: int | None = None,
    search: str | None = None,
    limit: int = 10_000,
) -> str:
    record = store.run(run_id)
    if record is None:
        raise KeyError(f"no run {run_id!r}; %distributed runs lists them")
    lines = store.logs(
        record.id, ranks=None if rank is None else [rank], search=search, limit=limit
    )
    out = [
        f"[rank {ln.rank}{' stderr' if ln.stream == 'stderr' else ''}] {ln.text}" for ln in lines
    ]
    return "\n".join(out) if out else f"run {record.id}: no output lines match"
