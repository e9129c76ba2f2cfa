"""CPU seconds per kind of process under a benchmark, every few seconds (issue 26).

Samples ``/proc/PID/stat`` (user + system) of a process and all its descendants and prints, per
interval, the CPU each kind spent (by command line: ``fake_ranks``, ``aggregator``, ``relay``,
``bench_scale``, the kernel's, else the first 40 characters). Used to see where the wall of a
10,000-rank cell on ``bench_scale.py`` goes when fakes, relays, aggregators and the kernel share
the cores. Usage: ``python benchmarks/cpu_by_process.py PID [--every 3]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path

KINDS = ("fake_ranks", "aggregator", "relay", "bench_scale")


def snapshot() -> dict[int, tuple[int, float, str]]:
    """Every process: its parent, its CPU seconds and its command line."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[int, float, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            line = (entry / "cmdline").read_text().replace("\0", " ")
        except OSError:
            continue
        out[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, line)
    return out


def descendants(root: int, snap: dict[int, tuple[int, float, str]]) -> set[int]:
    keep = {root}
    grew = True
    while grew:
        grew = False
        for pid, (parent, _, _) in snap.items():
            if parent in keep and pid not in keep:
                keep.add(pid)
                grew = True
    return keep


def kind(cmdline: str) -> str:
    return next((k for k in KINDS if k in cmdline), cmdline[:40])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pid", type=int)
    parser.add_argument("--every", type=float, default=3.0)
    args = parser.parse_args()
    before: dict[int, float] = {}
    then = time.monotonic()
    while Path(f"/proc/{args.pid}").exists():
        snap = snapshot()
        now = time.monotonic()
        spent: collections.Counter[str] = collections.Counter()
        cpu = {pid: snap[pid][1] for pid in descendants(args.pid, snap) if pid in snap}
        if before:
            for pid, seconds in cpu.items():
                spent[kind(snap[pid][2])] += seconds - before.get(pid, 0.0)
            shown = " ".join(f"{k}={v:.2f}" for k, v in sorted(spent.items()))
            print(f"{now - then:.1f}s {shown}", flush=True)
        before, then = cpu, now
        time.sleep(args.every)


if __name__ == "__main__":
    main()
