"""Communication per step from the newest probe of the cluster: one gloo/NCCL call's seconds by
its size, from the probe's own ``all_reduce`` measurements where it has them (what a call of the
library really costs on these ranks: a per-call cost, far above the pairs' best round trip,
plus bytes at the curve's rate), else latency + bytes/bandwidth fitted per link class from its
pairs.

The per-call cost is the probe's ``allreduce_call_s``: small all_reduces each timed right after
a millisecond of the rank's own work, as a step makes its calls (:func:`.worker.probe._calls`).
Not the curve's fitted overhead, as it was: its points are each the mean of 5 calls back to
back, and it moved 0.00-2.52 ms between probes of the same 2 ranks. Nor the best of calls back
to back (0.33-0.37 ms, steady): inside a DDP step on 2 gloo ranks of a 2-core machine the
bucket's all_reduce (661 KB, ``mlp``) cost 2.6 ms (median; 0.6 ms back to back), the step
3.0-3.4 ms more than under ``no_sync`` (``benchmarks/bench_ddp_parts.py``, load 2-3). Probes
from before it had this figure keep the curve's overhead.

Every call is costed on its own: a step that makes many small calls (the pipeline's per-tensor
gradient all-reduce, FSDP's per-layer all-gathers) pays each call's latency, which a formula of
the total bytes misses.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any

from .intake import AdviseError

MESSAGE_ROUND_TRIPS = 2  # what a pipeline's message costs, in the probe's pair round trips


@dataclass(frozen=True)
class Links:
    """Latency (s) and bandwidth (bytes/s) per link class, and the all_reduce curve of the
    probe's ranks as a per-call overhead and a rate."""

    latency: dict[str, float]
    bandwidth: dict[str, float]
    probe_run: str
    curve: tuple[float, float] | None = None  # a call's overhead (s), all_reduce bytes/s
    curve_world: int = 0
    typical: dict[str, float] = dataclasses.field(default_factory=dict)  # median latency
    call: float | None = None  # a small all_reduce's seconds as a step makes it (the probe's)

    def klass(self, spans_nodes: bool) -> str:
        want = "inter" if spans_nodes else "intra"
        return want if want in self.latency else next(iter(self.latency))

    def _alpha_beta(self, nbytes: float, n: int, spans_nodes: bool, volume: float) -> float:
        k = self.klass(spans_nodes)
        return volume * (n - 1) / n * nbytes / self.bandwidth[k] + 2 * (n - 1) * self.latency[k]

    def _on_curve(self, nbytes: float) -> float:
        alpha, beta = self.curve or (0.0, 1.0)
        return (alpha if self.call is None else self.call) + nbytes / beta

    def allreduce(self, nbytes: float, n: int, spans_nodes: bool) -> float:
        """One all_reduce of ``nbytes`` over ``n`` ranks."""
        if n < 2 or nbytes <= 0:
            return 0.0
        if self.curve and (n == self.curve_world or not spans_nodes):
            return self._on_curve(nbytes)
        return self._alpha_beta(nbytes, n, spans_nodes, 2.0)

    def gather(self, nbytes: float, n: int, spans_nodes: bool) -> float:
        """One all-gather or reduce-scatter of ``nbytes`` in all: half an all_reduce's volume,
        the same per-call overhead."""
        if n < 2 or nbytes <= 0:
            return 0.0
        if self.curve and (n == self.curve_world or not spans_nodes):
            return self._on_curve(nbytes / 2)
        return self._alpha_beta(nbytes, n, spans_nodes, 1.0)

    def p2p(self, nbytes: float, spans_nodes: bool) -> float:
        """One pipeline message of ``nbytes`` from a rank to another: where the probe measured
        that link class's pairs, ``MESSAGE_ROUND_TRIPS`` of their best ping-pong round trip,
        else (given hardware) the link's one-way latency; then the bytes at the link's
        bandwidth. The best, not the median: a ``--quick`` probe's median of 4 round trips
        caught a load spike once in four runs here (a send then cost 60 ms, the pipelines 10-70x
        their measured steps), its best stayed at 52-94 µs; what the load adds is the ranks'
        share of the cores, which ``--verify`` measures and calibration carries.

        Not the all_reduce curve's per-call overhead, as it was: fitted from points that are
        each the mean of 5 calls (one call that waits for a core moves it), it moved from 0.05
        to 2.5 ms between probes of the same 2 ranks within an hour, while the pairs' latency
        of those probes stayed at 52-76 µs; a send cost 0.06-1.3 ms by it, and the pipelines
        were predicted ~2x too slow on a quiet machine (overhead 1.6-2.5 ms) and 50-70 % short
        at load 8-20 (0.1-0.9 ms). Nor the one-way latency: in a 2-stage pipeline of a stage
        of no compute (``Linear(4, 4)``, 16 microbatches, against each rank's stage run as a
        one-stage schedule in the same process, load ~4.5) a slot's two messages took
        0.47-0.53 ms, while the probe's pairs' round trip was 0.11-0.12 ms (a message waits
        for hand-offs to gloo's thread on both sides; which of them costs what was not
        measured).
        """
        k = self.klass(spans_nodes)
        measured = k in self.typical  # the probe's pairs (given hardware has no typical)
        overhead = MESSAGE_ROUND_TRIPS * 2 * self.latency[k] if measured else self.latency[k]
        return overhead + nbytes / self.bandwidth[k]


RATE_FROM = 1 << 20  # an all_reduce this large is timed by its bytes more than by its call


def fit_curve(
    points: list[tuple[int, float]], fallback_rate: float = 0.0
) -> tuple[float, float] | None:
    """A call's overhead and the bytes per second of an all_reduce, robustly from the probe's
    points: the rate of the largest, and the median of what each point took beyond its bytes
    at that rate (one slow or fast point, a warm-up or a busy moment, moves neither). Where the
    probe stopped before ``RATE_FROM`` bytes (its time budget spent in a busy moment), the
    largest point times the call, not the bytes: the overhead is then the points' median and
    the rate ``fallback_rate`` (the pairs'; measured: a 4 KiB point of 32 ms made a 128 KB/s
    "rate" and a 656 KB all-reduce 5.2 s, against 22 ms measured)."""
    if len(points) < 2:
        return None
    size, seconds = max(points)
    if size < RATE_FROM and fallback_rate > 0:
        return statistics.median(s for _, s in points), fallback_rate
    beta = size / seconds
    alpha = statistics.median(max(0.0, s - b / beta) for b, s in points)
    return alpha, beta


def fit_links(probe: dict[str, Any]) -> Links:
    """Latency and bandwidth per link class (the medians of the probe's pairs of that class),
    its all_reduce curve and its per-call cost."""
    latency: dict[str, float] = {}
    bandwidth: dict[str, float] = {}
    typical: dict[str, float] = {}
    for link in ("intra", "inter"):
        pairs = [p for p in probe.get("pairs", []) if p.get("link") == link]
        if pairs:
            latency[link] = statistics.median(p["latency_us"] for p in pairs) * 1e-6
            typical[link] = 1e-6 * statistics.median(
                p.get("median_latency_us", p["latency_us"]) for p in pairs
            )
            bandwidth[link] = statistics.median(p["bandwidth_gbs"] for p in pairs) * 1e9
    if not latency:
        raise AdviseError(f"probe {probe.get('run_id', '')} holds no pairs to fit links from")
    points = [
        (int(p["bytes"]), float(p["seconds"]))
        for p in probe.get("allreduce", [])
        if p.get("bytes", 0) > 0 and p.get("seconds", 0) > 0
    ]
    n = int(probe.get("world_size", 0))
    ring = n / (2 * (n - 1)) if n > 1 else 1.0  # an all_reduce's bytes per byte sent by a rank
    return Links(
        latency,
        bandwidth,
        str(probe.get("run_id", "")),
        fit_curve(points, min(bandwidth.values()) * ring),
        n,
        typical,
        float(probe["allreduce_call_s"]) if probe.get("allreduce_call_s") else None,
    )
