"""``%distributed probe`` on a rank: measure the links with the cluster's own collective library.

Under ``--backend mpi`` the ranks' ``comm`` (mpi4py) is used; otherwise ``torch.distributed``:
the process group a torch strategy made (gloo or nccl), else a gloo group made for the probe
from torchrun's variables and destroyed after it. No transport of our own is involved.

Every pair of ranks is measured alone (a barrier between pairs): the lower rank times ping-pong
round trips of 8 bytes (latency) and of ``pair_bytes`` (bandwidth). Then an ``all_reduce``
curve over ``sizes``, each timed by its slowest rank, stopping early when the next size would
exceed the time budget (all ranks agree through a MAX reduction). Then the cost of one small
``all_reduce`` as a training step makes it, each after a millisecond of the rank's own work
(``allreduce_call_s``). Only the standard library is imported at module level.

Rank 0 shows the progress as a line redrawn in place (``probe: pairs measured 3 of 6``, then
the all_reduce size), which the cell shows live; its end is one line, kept in the history.
"""

from __future__ import annotations

import array
import statistics
import sys
import time
from typing import Any

KB, MB = 1024, 1024 * 1024
SIZES = tuple(KB * 4**i for i in range(10))  # 1 KB .. 256 MB
LATENCY_ROUND_TRIPS = 20
# all_reduces of 1 KB timed as a step makes them (after the rank's own work): on 2 gloo ranks
# of a 2-core machine a call takes 0.2-0.4 ms or 2-5 ms, so the figure of 16 moved 0.3-2.2 ms
# from one probe to the next, of 96 0.8-1.6 ms (benchmarks/bench_probe_calls.py)
CALLS = 96
WORK_S = 2e-3  # the rank's own work before each (the suite's blocks: 0.7-3.5 ms)


class _Torch:
    def __init__(self) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.made = not dist.is_initialized()
        if self.made:
            dist.init_process_group("gloo", init_method="env://")
        self.library = f"torch.distributed {dist.get_backend()}"
        cuda = dist.get_backend() == "nccl"
        self.device = torch.device("cuda", torch.cuda.current_device()) if cuda else None
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def buffer(self, nbytes: int) -> Any:
        n = max(1, nbytes // 4)
        return self.torch.zeros(n, dtype=self.torch.float32, device=self.device or "cpu")

    def send(self, buf: Any, peer: int) -> None:
        self.dist.send(buf, peer)

    def recv(self, buf: Any, peer: int) -> None:
        self.dist.recv(buf, peer)

    def allreduce(self, buf: Any) -> None:
        self.dist.all_reduce(buf)

    def barrier(self) -> None:
        self.dist.barrier()

    def sync(self) -> None:
        if self.device is not None:
            self.torch.cuda.synchronize()

    def max(self, value: float) -> float:
        t = self.torch.tensor([value], dtype=self.torch.float64, device=self.device or "cpu")
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return float(t.item())

    def close(self) -> None:
        if self.made:
            self.dist.destroy_process_group()


class _Mpi:
    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self.comm, self.mpi = comm, MPI
        self.library = f"mpi4py ({MPI.Get_library_version().split(',')[0].strip()})"
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def buffer(self, nbytes: int) -> Any:
        return array.array("f", bytes(max(4, nbytes - nbytes % 4)))

    def send(self, buf: Any, peer: int) -> None:
        self.comm.Send(buf, dest=peer, tag=71)

    def recv(self, buf: Any, peer: int) -> None:
        self.comm.Recv(buf, source=peer, tag=71)

    def allreduce(self, buf: Any) -> None:
        self.comm.Allreduce(self.mpi.IN_PLACE, buf, op=self.mpi.SUM)

    def barrier(self) -> None:
        """A barrier that sleeps while it waits: MPI's own spins, and ranks waiting for a
        pair to finish would take the CPU that pair is measured with."""
        request = self.comm.Ibarrier()
        while not request.Test():
            time.sleep(0.0002)

    def sync(self) -> None:
        """MPI calls return when the data is in place."""

    def max(self, value: float) -> float:
        return float(self.comm.allreduce(value, op=self.mpi.MAX))

    def close(self) -> None:
        """The communicator is the cluster's; it stays."""


Library = _Torch | _Mpi


def _library(namespace: dict[str, Any]) -> Library:
    comm = namespace.get("comm")
    if comm is not None and type(comm).__module__.startswith("mpi4py"):
        return _Mpi(comm)
    return _Torch()


def _round_trips(lib: Library, buf: Any, peer: int, first: bool, times: int) -> list[float]:
    out = []
    for i in range(times + 1):  # the first one warms the connection up
        t0 = time.perf_counter()
        if first:
            lib.send(buf, peer)
            lib.recv(buf, peer)
        else:
            lib.recv(buf, peer)
            lib.send(buf, peer)
        lib.sync()
        if i:
            out.append(time.perf_counter() - t0)
    return out


def _count(lib: Library) -> int:
    """The pairs of ranks."""
    return lib.size * (lib.size - 1) // 2


def _progress(lib: Library, text: str, end: str = "") -> None:
    """Rank 0's progress line, redrawn in place (a carriage return before it)."""
    if lib.rank == 0:
        sys.stderr.write(f"\rprobe: {text}{end}")
        sys.stderr.flush()


def _pairs(lib: Library, pair_bytes: int, lat_times: int, bw_times: int) -> dict[str, Any]:
    small, big = lib.buffer(8), lib.buffer(pair_bytes)
    nbytes = max(4, pair_bytes - pair_bytes % 4)
    out: dict[str, Any] = {}
    total, done = _count(lib), 0
    _progress(lib, f"pairs measured 0 of {total}")
    for a in range(lib.size):
        for b in range(a + 1, lib.size):
            if lib.rank in (a, b):
                first = lib.rank == a
                peer = b if first else a
                lat = _round_trips(lib, small, peer, first, lat_times)
                bw = _round_trips(lib, big, peer, first, bw_times)
                if first:
                    # the best round trip: the link's capacity, not the machine's load
                    out[f"{a}-{b}"] = {
                        "latency_us": min(lat) / 2 * 1e6,
                        "bandwidth_gbs": 2 * nbytes / min(bw) / 1e9,
                        "median_latency_us": statistics.median(lat) / 2 * 1e6,
                        "median_bandwidth_gbs": 2 * nbytes / statistics.median(bw) / 1e9,
                    }
            lib.barrier()
            done += 1
            _progress(lib, f"pairs measured {done} of {total}")
    return out


def _curve(lib: Library, sizes: tuple[int, ...], budget: float | None) -> list[dict[str, float]]:
    out: list[dict[str, float]] = []
    began = time.perf_counter()
    n = lib.size
    for size in sizes:
        _progress(lib, f"{_count(lib)} pairs measured · all_reduce of {size:,} bytes")
        buf = lib.buffer(size)
        lib.allreduce(buf)  # warm-up
        lib.sync()
        times = 5 if size <= MB else 2
        t0 = time.perf_counter()
        for _ in range(times):
            lib.allreduce(buf)
        lib.sync()
        seconds = lib.max((time.perf_counter() - t0) / times)  # the slowest rank's time
        algbw = size / seconds / 1e9
        out.append(
            {
                "bytes": size,
                "seconds": seconds,
                "algbw_gbs": algbw,
                "busbw_gbs": algbw * 2 * (n - 1) / n if n > 1 else algbw,
            }
        )
        del buf
        if budget is not None:
            next_cost = seconds * 4 * (times + 1)  # the next size is 4× larger
            late = time.perf_counter() - began + next_cost > budget
            if lib.max(1.0 if late else 0.0) > 0:
                break
    return out


def _busy(seconds: float) -> None:
    """This rank's own work for ``seconds`` (a spin: the core held, as compute holds it)."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def _calls(lib: Library, times: int = CALLS) -> float:
    """Seconds of one small all_reduce as a training step makes it: right after ``WORK_S`` of
    this rank's own work (the ranks met at a barrier before it). Not back to back: on 2 gloo
    ranks of a 2-core machine a 1 KB all_reduce took 0.33-0.37 ms (median) after the one
    before it, 1.4 ms after 1 ms of a spin, 0.9-2.6 ms after 2 ms, 1.9-2.1 ms after a
    forward+backward (medians of 31, 3 runs, load 3), and DDP's bucket all-reduce inside a
    step 2-3 ms. The mean of the calls less the slowest eighth (the cost of many calls, the
    spikes left out), the slowest rank's."""
    buf = lib.buffer(KB)
    lib.allreduce(buf)  # warm-up
    seconds = []
    for _ in range(times):
        lib.barrier()
        _busy(WORK_S)
        t0 = time.perf_counter()
        lib.allreduce(buf)
        lib.sync()
        seconds.append(time.perf_counter() - t0)
    kept = sorted(seconds)[: max(1, times - times // 8)]
    return lib.max(statistics.fmean(kept))


def run_probe(
    namespace: dict[str, Any],
    sizes: tuple[int, ...] = SIZES,
    budget: float | None = 6.0,
    pair_bytes: int = 4 * MB,
    quick: bool = False,
) -> dict[str, Any]:
    """This rank's measurements: the pairs it led (``"a-b"``) and the all_reduce curve."""
    began = time.perf_counter()
    lib = _library(namespace)
    try:
        lib.barrier()
        # 20 latency round trips even when quick (about 2 ms a pair): the best of 4 was once
        # 4 ms at load 7 on a 2-core machine, where 52-76 µs was the rule; the advisor costs a
        # pipeline's messages from it
        pairs = _pairs(lib, pair_bytes, LATENCY_ROUND_TRIPS, 2 if quick else 4)
        left = None if budget is None else max(0.5, budget - (time.perf_counter() - began))
        curve = _curve(lib, sizes, left)
        call = _calls(lib)
        _progress(lib, f"{_count(lib)} pairs measured, all_reduce at {len(curve)} sizes", "\n")
    finally:
        lib.close()
    return {
        "library": lib.library,
        "rank": lib.rank,
        "world_size": lib.size,
        "pairs": pairs,
        "allreduce": curve,
        "allreduce_call_s": call,
        "seconds": time.perf_counter() - began,
    }
