"""``%distributed probe``: measure a cluster's links from the kernel's side.

The probe is an ordinary run on the cluster's ranks (recorded in the history like any cell): each
rank runs :func:`.worker.probe.run_probe` with the cluster's own collective library and its
measurements come back as a pulled value. Here they become one result: every pair's latency and
bandwidth, marked intra-node or inter-node by the ranks' hosts, medians per kind of link, and
the ``all_reduce`` curve. The result is stored in the run's summary (``summary["probe"]``,
served with the run) and shown as a compact table.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .display import CellView
from .errors import SpecError
from .spec import Spec

if TYPE_CHECKING:
    from .session import Live

PULLED = "_jd_probe"
MAX_SIZE = 1024**3
MATRIX_UP_TO = 8  # ranks shown as a bandwidth matrix under the cell
_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "KB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
}


@dataclass(frozen=True)
class ProbeSettings:
    quick: bool = False
    sizes: tuple[int, ...] | None = None  # given sizes run in full (no time budget)

    def code(self) -> str:
        budget = 1.5 if self.quick else 6.0
        args = [f"quick={self.quick!r}"]
        if self.sizes is not None:
            args += [f"sizes={self.sizes!r}", "budget=None"]
        else:
            args.append(f"budget={budget!r}")
        if self.quick:
            args.append("pair_bytes=1024 * 1024")
        return (
            "# %distributed probe: links between the ranks\n"
            "from jupyter_distributed.worker.probe import run_probe as _jd_run_probe\n"
            f"{PULLED} = _jd_run_probe(globals(), {', '.join(args)})\n"
            "del _jd_run_probe\n"
        )


def parse_size(text: str) -> int:
    """``"4K"``, ``"16MB"``, ``"1GiB"``, ``"512"`` → bytes."""
    t = text.strip().upper().replace("IB", "B")
    digits = t[: len(t) - len(t.lstrip("0123456789"))]
    unit = t[len(digits) :]
    if not digits or unit not in _UNITS or len(digits) > 12:
        raise SpecError(f"--sizes: {text!r} is not a size like 4K, 16M or 1G")
    size = int(digits) * _UNITS[unit]
    if not 4 <= size <= MAX_SIZE:
        raise SpecError(f"--sizes: {text!r} must be between 4 bytes and 1G")
    return size


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"1K,1M"`` → those sizes; ``"1K-256M"`` → 1K, 4K, … (×4) up to 256M."""
    if "-" in text and "," not in text:
        lo, hi = (parse_size(t) for t in text.split("-", 1))
        if hi < lo:
            raise SpecError(f"--sizes {text}: write the range low-high")
        out = [lo]
        while out[-1] * 4 <= hi:
            out.append(out[-1] * 4)
        return tuple(out)
    sizes = tuple(sorted({parse_size(t) for t in text.split(",") if t.strip()}))
    if not sizes:
        raise SpecError("--sizes needs sizes like 1K,1M or a range 1K-256M")
    return sizes


def target(live: Mapping[str, Live], cluster: str | None, given: Spec | None) -> Spec:
    """What to probe: the cluster ``cluster`` while it lives in this kernel (the panel's Probe
    names the selected run's), else the ``given`` settings, else the newest live cluster."""
    for each in live.values():
        if cluster and each.cluster.id == cluster and each.cluster.alive:
            return each.spec
    if given is not None:
        return given
    if cluster:
        raise SpecError(
            f"cluster {cluster} is no longer running in this kernel; give its settings, "
            "e.g. %distributed probe -n 4"
        )
    if live:
        return list(live.values())[-1].spec
    raise SpecError(
        "no live cluster to probe: run a cell first or give its settings, "
        "e.g. %distributed probe -n 4"
    )


def probe_spec(spec: Spec) -> Spec:
    """The cluster's settings, running the probe: every rank, nothing pushed, one pull."""
    return replace(spec, pull=(PULLED,), push=(), targets=None, sweep=None, params=())


def assemble(per_rank: list[dict[str, Any]], hosts: dict[int, str]) -> dict[str, Any]:
    """One result from the ranks' measurements (rank order) and where each rank runs."""
    n = len(per_rank)
    pairs = []
    for measured in per_rank:
        for key, m in measured["pairs"].items():
            a, b = (int(x) for x in key.split("-"))
            link = "intra" if hosts.get(a, "") == hosts.get(b, "?") else "inter"
            pairs.append({"a": a, "b": b, "link": link, **m})
    pairs.sort(key=lambda p: (p["a"], p["b"]))
    groups = {}
    for link in ("intra", "inter"):
        chosen = [p for p in pairs if p["link"] == link]
        if chosen:
            groups[link] = {
                "pairs": len(chosen),
                "latency_us": statistics.median(p["latency_us"] for p in chosen),
                "bandwidth_gbs": statistics.median(p["bandwidth_gbs"] for p in chosen),
                "min_bandwidth_gbs": min(p["bandwidth_gbs"] for p in chosen),
            }
    call = {k: per_rank[0][k] for k in ("allreduce_call_s",) if per_rank and k in per_rank[0]}
    return {
        "library": per_rank[0]["library"] if per_rank else "",
        "world_size": n,
        "hosts": [hosts.get(r, "") for r in range(n)],
        "pairs": pairs,
        "groups": groups,
        "allreduce": per_rank[0]["allreduce"] if per_rank else [],
        **call,  # a small all_reduce as a step makes it (the slowest rank's already)
        "rank_seconds": max((m["seconds"] for m in per_rank), default=0.0),
    }


def run(session: Any, spec: Spec, settings: ProbeSettings, view: CellView) -> dict[str, Any]:
    """Probe the cluster of ``spec`` (the live one when it matches); store and return it."""
    began = time.perf_counter()
    ns: dict[str, Any] = {}
    session.run_cell(probe_spec(spec), settings.code(), ns, view=view)
    hosts = {r.rank: r.host for r in session.store.ranks(view.run_id)}
    live = session.live.get(spec.backend)
    if live is not None:  # the hosts as the plan names them: two hosts may share a hostname
        hosts.update({r.rank: r.host for r in live.cluster.plan.ranks})
    result = assemble(ns[PULLED], hosts)
    result["seconds"] = time.perf_counter() - began
    result["run_id"] = view.run_id
    session.store.update_summary(view.run_id, probe=result)
    return result


def _size(n: float) -> str:
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}B"


def table(result: dict[str, Any]) -> str:
    hosts = result["hosts"]
    lines = [
        f"probe {result.get('run_id', '')}: {result['world_size']} rank(s) on "
        f"{len(set(hosts))} host(s), {result['library']}, {result.get('seconds', 0):.1f}s",
        f"  {'link':<6} {'pairs':>5} {'latency µs':>11} {'GB/s median':>12} {'GB/s min':>9}",
    ]
    for link, g in result["groups"].items():
        lines.append(
            f"  {link:<6} {g['pairs']:>5} {g['latency_us']:>11.1f} "
            f"{g['bandwidth_gbs']:>12.3f} {g['min_bandwidth_gbs']:>9.3f}"
        )
    n = result["world_size"]
    if 1 < n <= MATRIX_UP_TO:
        bw = {(p["a"], p["b"]): p["bandwidth_gbs"] for p in result["pairs"]}
        lines.append(
            "  bandwidth GB/s (row ↔ column); hosts: "
            + ", ".join(f"{r}={h}" for r, h in enumerate(hosts))
        )
        lines.append("      " + "".join(f"{c:>8}" for c in range(n)))
        for r in range(n):
            cells = [
                "-" if r == c else f"{bw.get((min(r, c), max(r, c)), float('nan')):.3f}"
                for c in range(n)
            ]
            lines.append(f"  {r:>3} " + "".join(f"{x:>8}" for x in cells))
    curve = result["allreduce"]
    if curve:
        lines.append(
            "  all_reduce bus GB/s: "
            + "  ".join(f"{_size(p['bytes'])} {p['busbw_gbs']:.3f}" for p in curve)
        )
    return "\n".join(lines)
