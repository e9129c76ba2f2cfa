"""A price of a message on busy cores (issue 25), tried as a part of ``%distributed probe`` and
NOT merged into it (it was not steady: ``bench_probe_slot.py``, RESULTS.md h13-advslot): what a
pipeline slot's exchange and a step's all_reduce cost right after the rank's own compute, on the
same thread, as a step pays them.

The pairs' ping-pong (``worker/probe.py``) times messages on idle cores; inside a pipelined step
on 2 gloo ranks of a 2-core machine a slot's messages cost 1.3-1.8x what that predicts
(RESULTS.md, h12-advworst), and a figure of one message taken on the probe moved 0.05-0.37 ms
between probes minutes apart (h10-advfit, h11-advmsg). Here each round is paired: a kernel of
compute alone, then the same kernel followed by the exchange; the price is the median of the
pairs' differences (the drift of the load cancels within a pair), with the order-statistic
95 % interval of that median. It takes a library of ``worker/probe.py``'s interface.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Protocol

ROUNDS = 160  # paired rounds per figure: ~1 s each at 2 ms of compute
WORK_S = 2e-3  # the compute of one round (the suite's blocks: 0.7-3.5 ms)
SLOT_BYTES = 16 * 1024  # one message of the pair's exchange
CALL_BYTES = 1024


class _Lib(Protocol):
    rank: int
    size: int

    def buffer(self, nbytes: int) -> Any: ...
    def send(self, buf: Any, peer: int) -> None: ...
    def recv(self, buf: Any, peer: int) -> None: ...
    def allreduce(self, buf: Any) -> None: ...
    def barrier(self) -> None: ...
    def sync(self) -> None: ...
    def max(self, value: float) -> float: ...


class _Kernel:
    """A GEMM repeated to about ``seconds`` (torch's, on this rank's threads); a spin where
    torch is not importable (an MPI cluster without it)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.times = 0
        self.alone: list[float] = []
        try:
            import torch
        except ImportError:
            return
        self.a = torch.rand(192, 192)
        self.b = torch.rand(192, 192)
        self.mm = torch.mm
        self.mm(self.a, self.b)
        t0 = time.perf_counter()
        for _ in range(8):
            self.mm(self.a, self.b)
        one = max(1e-6, (time.perf_counter() - t0) / 8)
        self.times = max(1, round(seconds / one))

    def run(self) -> None:
        if not self.times:
            until = time.perf_counter() + self.seconds
            while time.perf_counter() < until:
                pass
            return
        for _ in range(self.times):
            self.mm(self.a, self.b)


def interval(values: list[float]) -> tuple[float, float, float]:
    """The median and its order-statistic 95 % interval."""
    s = sorted(values)
    n = len(s)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half))
    return statistics.median(s), s[lo], s[hi]


def _pair_rounds(lib: _Lib, kernel: _Kernel, exchange: Any, rounds: int) -> list[float]:
    """Each round's (compute + exchange) - (compute alone), this rank's; the compute alone's
    seconds in ``kernel.alone``."""
    out = []
    kernel.alone = []
    for i in range(rounds + 2):  # two to warm up
        t0 = time.perf_counter()
        kernel.run()
        t1 = time.perf_counter()
        kernel.run()
        exchange()
        t2 = time.perf_counter()
        if i >= 2:
            out.append((t2 - t1) - (t1 - t0))
            kernel.alone.append(t1 - t0)
    return out


def measure(
    lib: _Lib, rounds: int = ROUNDS, work_s: float = WORK_S, cross: bool = False
) -> dict[str, Any]:
    """Ranks 0 and 1's slot price (s, per message: half an exchange of ``SLOT_BYTES`` each way)
    and every rank's all_reduce of ``CALL_BYTES`` after compute (s), each the slowest rank's
    median with its interval. Other ranks wait at the barrier for the pair. ``cross``: the two
    messages cross (each rank posts its send, then receives; torch only), as a slot's
    activation forward and gradient back do, instead of a ping-pong."""
    kernel = _Kernel(work_s)
    out: dict[str, Any] = {"work_s": work_s, "rounds": rounds, "slot_bytes": SLOT_BYTES}
    buf = lib.buffer(SLOT_BYTES)
    lib.barrier()
    if lib.rank < 2 <= lib.size:
        peer = 1 - lib.rank

        other = lib.buffer(SLOT_BYTES)

        def exchange() -> None:
            if cross:
                sent = lib.dist.isend(buf, peer)  # type: ignore[attr-defined]
                lib.recv(other, peer)
                sent.wait()
            elif lib.rank == 0:
                lib.send(buf, peer)
                lib.recv(buf, peer)
            else:
                lib.recv(buf, peer)
                lib.send(buf, peer)
            lib.sync()

        med, lo, hi = interval([d / 2 for d in _pair_rounds(lib, kernel, exchange, rounds)])
    else:
        med = lo = hi = 0.0
    lib.barrier()
    out["slot_compute_s"] = lib.max(statistics.median(kernel.alone or [0.0]))
    out["slot_message_s"] = lib.max(med)
    out["slot_message_ci_s"] = [lib.max(lo), lib.max(hi)]
    small = lib.buffer(CALL_BYTES)

    def call() -> None:
        lib.allreduce(small)
        lib.sync()

    med, lo, hi = interval(_pair_rounds(lib, kernel, call, rounds))
    out["call_after_compute_s"] = lib.max(med)
    out["call_after_compute_ci_s"] = [lib.max(lo), lib.max(hi)]
    return out
