"""``%distributed probe`` and ``--sweep``: what they cost and what the probe measures.

Run: ``python benchmarks/bench_probe.py [--ranks 2,4,8] [--combos 4]`` (root with ``ip`` adds
the two-host veth measurement; nothing else is needed).

- probe: kernel-side wall time of ``%distributed probe`` (default and ``--quick``) on a live
  cluster (local ranks with ``--strategy ddp`` so torch is already imported; mpi ranks), and the
  median pair bandwidth / latency it found.
- two hosts: mpi ranks on this machine and in a network namespace joined by a veth pair (the
  test suite's set-up, unshaped): loopback pairs against veth pairs, default probe.
- sweep: a ``--sweep`` of N trivial combinations on 1 local rank each (every combination starts
  its own ranks) against the loop a user would otherwise write: a cold cell per value
  (``%distributed stop`` then the cell), in the same process, one after the other.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import subprocess
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

from jupyter_distributed import probe
from jupyter_distributed.backends.mpi.options import MpiOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout, Strategy
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.sweeps import parse_sweep


def _quiet() -> CellView:
    return CellView(out=io.StringIO(), err=io.StringIO(), quiet=True)


def _probe_rows(session: Session, spec: Spec, label: str) -> list[str]:
    session.run_cell(spec, "pass", {}, view=_quiet())  # the live cluster
    rows = []
    for quick in (False, True):
        r = probe.run(session, spec, probe.ProbeSettings(quick=quick), _quiet())
        for link, g in r["groups"].items():
            top = r["allreduce"][-1]
            rows.append(
                f"| {label} | {'quick' if quick else 'default'} | {r['seconds']:.2f} s | {link} "
                f"({g['pairs']} pairs) | {g['bandwidth_gbs']:.2f} GB/s (min "
                f"{g['min_bandwidth_gbs']:.2f}) | {g['latency_us']:.1f} µs | up to "
                f"{probe._size(top['bytes'])}: {top['busbw_gbs']:.2f} GB/s |"
            )
    session.stop()
    return rows


def _two_hosts(workdir: Path, session: Session) -> list[str]:
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("mpirun") is None:
        return ["| two hosts | skipped: needs root, ip and mpirun | | | | | |"]
    tag = os.getpid() % 100000
    netns, veth, peer = f"jdb-{tag}", f"jdb{tag}a", f"jdb{tag}b"
    octet = 100 + tag % 150
    here, there, subnet = f"10.232.{octet}.1", f"10.232.{octet}.2", f"10.232.{octet}.0/24"
    agent = workdir / "agent"
    agent.write_text(
        f'#!/bin/sh\nhost=$1; shift\n[ "$host" = {there} ] && exec ip netns exec {netns} '
        '/bin/sh -c "$*"\nexit 1\n'
    )
    agent.chmod(0o755)

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)  # noqa: S603, S607

    try:
        ip("netns", "add", netns)
        ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        ip("link", "set", peer, "netns", netns)
        ip("addr", "add", f"{here}/24", "dev", veth)
        ip("link", "set", veth, "up")
        ip("-n", netns, "addr", "add", f"{there}/24", "dev", peer)
        ip("-n", netns, "link", "set", peer, "up")
        ip("-n", netns, "link", "set", "lo", "up")
        options = (
            f"--mca plm_rsh_agent {agent} --mca oob_tcp_if_include {subnet} "
            f"--mca btl_tcp_if_include {subnet} --mca btl self,tcp"
        )
        spec = Spec(
            layout=Layout(nodes=2, procs_per_node=2),
            backend="mpi",
            options=MpiOptions(hosts=(here, there), mpi_options=options),
        )
        return _probe_rows(session, spec, "mpi, 2 hosts × 2 (veth, unshaped)")
    finally:
        subprocess.run(["ip", "link", "del", veth], capture_output=True)  # noqa: S603, S607
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)  # noqa: S603, S607


def _sweep_rows(session: Session, combos: int) -> list[str]:
    values = ",".join(str(i) for i in range(combos))
    code = "y = v * 2"
    base = Spec(layout=Layout(procs_per_node=1), pull=("y",))
    rows = []
    for parallel in (1, 2):
        spec = replace(base, sweep=parse_sweep([f"v={values}"], parallel))
        ns: dict[str, Any] = {}
        t0 = time.perf_counter()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            session.run_sweep(spec, code, ns)
        wall = time.perf_counter() - t0
        assert len(ns["y"]) == combos
        rows.append(
            f"| --sweep, {combos} combinations, --sweep-parallel {parallel} | {wall:.2f} s | "
            f"{wall / combos * 1000:.0f} ms |"
        )
    t0 = time.perf_counter()
    for i in range(combos):
        session.stop()
        session.run_cell(replace(base, push=("v",)), code, {"v": i}, view=_quiet())
    session.stop()
    wall = time.perf_counter() - t0
    rows.append(
        f"| loop of {combos} cold cells (stop + cell, push v) | {wall:.2f} s | "
        f"{wall / combos * 1000:.0f} ms |"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", default="2,4,8")
    parser.add_argument("--combos", type=int, default=4)
    args = parser.parse_args()
    began = time.time()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(Store(Path(tmp) / "history.sqlite3"))
        rows: list[str] = []
        for n in (int(x) for x in args.ranks.split(",")):
            ddp = Spec(layout=Layout(procs_per_node=n, strategy=Strategy.DDP))
            rows += _probe_rows(session, ddp, f"local ddp (gloo), {n} ranks")
            if shutil.which("mpirun"):
                mpi = Spec(layout=Layout(procs_per_node=n), backend="mpi", options=MpiOptions())
                rows += _probe_rows(session, mpi, f"mpi, {n} ranks")
        rows += _two_hosts(Path(tmp), session)
        sweep = _sweep_rows(session, args.combos)
        session.shutdown()
    print(
        f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(began))}, "
        f"{time.time() - began:.0f} s; {os.cpu_count()} cores, {platform.platform()}, "
        f"Python {platform.python_version()}; load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end.\n"
    )
    print("| cluster | probe | wall time | link | pair bandwidth (median) | latency | all_reduce |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\n| sweep overhead | wall | per combination |\n|---|---|---|")
    print("\n".join(sweep))


if __name__ == "__main__":
    main()
