"""Why a stop puts its ranks under SCHED_BATCH first: one thread wakes N processes (issue 26).

    python benchmarks/bench_wake.py [--procs 1000] [--cpu-ms 3] [--rounds 2]

N forked processes each wait on their end of a Unix ``SOCK_SEQPACKET`` pair (as a rank waits on
its cell socket); one thread writes a byte to each in turn (as the kernel writes the
Shutdowns); each process woken burns ``--cpu-ms`` of CPU (a rank's exit, ~3 ms) and exits.
Per policy of the woken processes (``other``: as before; ``batch``: ``SCHED_BATCH``, set from
the sending process just before and put back after, as the stop does), alternated over
``--rounds``, it prints
the time to write all N, and until all N have ended. On a machine with idle cores the writes
take milliseconds while the cores are free; once every core is busy, a process woken with
``other`` is put on the writer's core and runs first, so the writes, and the exits with them,
go one at a time. Standard library only; Linux.
"""

from __future__ import annotations

import argparse
import os
import socket
import time


def one(procs: int, cpu_ms: float, policy: str) -> tuple[float, float]:
    """(seconds to write to all, seconds until all ended)."""
    ends, pids = [], []
    for _ in range(procs):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # (the woken process: wait, burn, exit)
            mine.close()
            theirs.recv(1)
            t0 = time.thread_time()
            while time.thread_time() - t0 < cpu_ms / 1e3:
                pass
            os._exit(0)
        theirs.close()
        ends.append(mine)
        pids.append(pid)
    time.sleep(0.5)  # (every one waits in recv)
    if policy == "batch":
        for pid in pids:
            os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))
    t0 = time.monotonic()
    for end in ends:
        end.send(b"x")
    sent = time.monotonic() - t0
    if policy == "batch":  # (back once all are written, as the stop does)
        for pid in pids:
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
    for pid in pids:
        os.waitpid(pid, 0)
    gone = time.monotonic() - t0
    for end in ends:
        end.close()
    return sent, gone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=1000)
    parser.add_argument("--cpu-ms", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.procs} processes woken "
        f"one after another, each then {args.cpu_ms} ms of CPU"
    )
    print("| round | woken processes' policy | all written | all ended | load |")
    print("|---|---|---|---|---|")
    for i in range(args.rounds):
        for policy in ("other", "batch"):
            sent, gone = one(args.procs, args.cpu_ms, policy)
            times = f"{sent * 1e3:.0f} ms | {gone * 1e3:.0f} ms"
            print(f"| {i + 1} | {policy} | {times} | {os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
