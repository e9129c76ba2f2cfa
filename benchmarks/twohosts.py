"""Two "hosts" on this machine for the benchmarks: this machine's end of a veth pair and a
network namespace on the other end, each with its own address in a private /24, as
``tests/python/test_mpi_hosts.py`` makes them (root and ``ip`` needed). mpirun reaches host 2
through a remote-launch agent that enters the namespace instead of using ssh, so the ranks
there reach the kernel and the other host's ranks only across the veth link.

Options (``--shaped RATE[/DELAY]`` of the benchmarks):

- ``shape``: the veth link shaped with ``tc``, both ways: a token bucket (``tbf``) at RATE, and
  with a DELAY ``netem`` (delay and rate), where the kernel has it. Traffic between two ranks of
  one host never crosses the veth (their addresses are local), so only the inter-node link is
  shaped.
- ``split_cores``: each host gets half of this process's cores (this process and what it
  starts keep the first half; the agent runs host 2's ranks on the second), so the two nodes
  compute side by side as real nodes do, instead of sharing every core.

Both ends of the link carry the same interface name, so one ``GLOO_SOCKET_IFNAME`` (passed to
every rank with ``--env``) names each host's own address for gloo.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

AGENT = """#!/bin/sh
# mpirun's remote-launch agent: "agent HOST COMMAND..." runs COMMAND in HOST's namespace
host=$1; shift
case "$host" in
  {there}) exec nsenter --net=/run/netns/{netns} {pin}/bin/sh -c "$*" ;;
esac
echo "no network namespace for host $host" >&2
exit 1
"""


@dataclass(frozen=True)
class Shape:
    rate: str  # tc's rate, e.g. 400mbit
    delay: str = ""  # netem's one-way delay, e.g. 2ms ("" none)

    def qdisc(self) -> list[str]:
        if self.delay:
            return ["netem", "delay", self.delay, "rate", self.rate, "limit", "10000"]
        return ["tbf", "rate", self.rate, "burst", "64kb", "latency", "50ms"]

    def __str__(self) -> str:
        return f"{self.rate}" + (f", {self.delay} one way" if self.delay else "")


def parse_shape(text: str) -> Shape:
    """``"400mbit"``, ``"400mbit/2ms"`` or ``"2ms/400mbit"`` (a rate in tc's units, bit or
    bps, and an optional delay in ms or us)."""
    rate = delay = ""
    for part in text.split("/"):
        p = part.strip().lower()
        if re.fullmatch(r"\d+(\.\d+)?(k|m|g)?(bit|bps)", p):
            rate = p
        elif re.fullmatch(r"\d+(\.\d+)?(ms|us)", p):
            delay = p
        else:
            raise ValueError(f"--shaped {text}: {part!r} is neither a rate (400mbit) nor a delay")
    if not rate:
        raise ValueError(f"--shaped {text}: give a rate, e.g. 400mbit or 400mbit/2ms")
    return Shape(rate, delay)


@dataclass(frozen=True)
class TwoHosts:
    here: str
    there: str
    subnet: str
    ifname: str  # the veth's name on both hosts
    agent: Path
    netns: str
    cores: tuple[tuple[int, ...], tuple[int, ...]]  # each host's cores
    shape: Shape | None

    def launch_options(self, threads: int) -> str:
        """What a ``%%distributed --nodes 2`` line adds to run on these two hosts (``--backend
        mpi``; no shared-memory transport: the two hosts share /dev/shm and a hostname, so
        Open MPI's segments would collide), each rank on ``threads`` torch threads."""
        mpi = (
            f"--mca plm_rsh_agent {self.agent} --mca oob_tcp_if_include {self.subnet} "
            f"--mca btl_tcp_if_include {self.subnet} --mca btl self,tcp"
        )
        return (
            f'--backend mpi --hosts {self.here},{self.there} --mpi-options "{mpi}" '
            f"--env GLOO_SOCKET_IFNAME={self.ifname} --env OMP_NUM_THREADS={threads}"
        )


def missing() -> str:
    """Why two hosts cannot be made here; empty when they can."""
    if os.geteuid() != 0:
        return "making a network namespace and a veth pair needs root"
    for tool in ("ip", "tc", "nsenter", "taskset", "mpirun"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return ""


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")


@contextlib.contextmanager
def two_hosts(workdir: Path, shape: Shape | None, split_cores: bool = True) -> Iterator[TwoHosts]:
    """Make the two hosts (and shape their link); undo it all on the way out."""
    if why := missing():
        raise RuntimeError(f"two hosts: {why}")
    tag = os.getpid() % 100000
    netns, ifname, peer = f"jdadv-{tag}", f"jdadv{tag}", f"jdadp{tag}"
    octet = 100 + tag % 150
    here, there, subnet = f"10.233.{octet}.1", f"10.233.{octet}.2", f"10.233.{octet}.0/24"
    mine = tuple(sorted(os.sched_getaffinity(0)))
    half = max(1, len(mine) // 2)
    cores = (mine[:half], mine[half:] or mine[:half]) if split_cores else (mine, mine)
    pin = f"taskset -c {','.join(map(str, cores[1]))} " if split_cores else ""
    agent = workdir / "netns-agent"
    agent.write_text(AGENT.format(there=there, netns=netns, pin=pin))
    agent.chmod(0o755)
    _run("ip", "netns", "add", netns)
    try:
        _run("ip", "link", "add", ifname, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", netns)
        _run("ip", "-n", netns, "link", "set", peer, "name", ifname)
        _run("ip", "addr", "add", f"{here}/24", "dev", ifname)
        _run("ip", "link", "set", ifname, "up")
        _run("ip", "-n", netns, "addr", "add", f"{there}/24", "dev", ifname)
        _run("ip", "-n", netns, "link", "set", ifname, "up")
        _run("ip", "-n", netns, "link", "set", "lo", "up")
        if shape is not None:
            try:
                _run("tc", "qdisc", "add", "dev", ifname, "root", *shape.qdisc())
            except RuntimeError as exc:
                raise RuntimeError(
                    f"--shaped {shape}: {exc} (this kernel lacks that qdisc: netem needs "
                    "CONFIG_NET_SCH_NETEM; without a delay, tbf is used)"
                ) from None
            _run("nsenter", f"--net=/run/netns/{netns}", "tc", "qdisc", "add", "dev", ifname,
                 "root", *shape.qdisc())  # fmt: skip
        was = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cores[0])
        try:
            yield TwoHosts(here, there, subnet, ifname, agent, netns, cores, shape)
        finally:
            os.sched_setaffinity(0, was)
    finally:
        subprocess.run(["ip", "link", "del", ifname], capture_output=True, check=False)  # noqa: S603, S607
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)  # noqa: S603, S607
