"""Network namespaces the tests create, enter and delete (Linux, as root).

Daemons start inside one with ``nsenter --net=`` (not ``ip netns exec``, which remounts /sys and
breaks slurmd). The test process itself enters one on its main thread only (``setns``), so the
kernel side of a cluster (srun, ``ray.init``, the control channel) lives where the ranks are.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

CLONE_NEWNET = 0x40000000


def missing() -> str:
    """Why namespaces cannot be made here; empty when they can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 util-linux)"
    return ""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class NetNs:
    """A named namespace with ``lo`` up; ``veth=True`` adds a veth pair with a private address
    (slurmctld's getaddrinfo uses AI_ADDRCONFIG, which fails with loopback only). Nothing is
    ever sent to that address: every daemon and client here uses 127.0.0.1."""

    def __init__(self, purpose: str, veth: bool = False) -> None:
        self.name = f"jd-{purpose}-{os.getpid()}-{secrets.token_hex(2)}"
        _ip("netns", "add", self.name)
        self.path = Path("/run/netns") / self.name
        try:
            _ip("-n", self.name, "link", "set", "lo", "up")
            if veth:
                _ip("-n", self.name, "link", "add", "jd0", "type", "veth", "peer", "name", "jd1")
                _ip("-n", self.name, "addr", "add", "169.254.77.1/30", "dev", "jd0")
                _ip("-n", self.name, "link", "set", "jd0", "up")
                _ip("-n", self.name, "link", "set", "jd1", "up")
        except BaseException:
            self.delete()
            raise

    def command(self, *argv: str) -> list[str]:
        """``argv`` run inside the namespace (nsenter execs it: the pid is the program's)."""
        return ["nsenter", f"--net={self.path}", *argv]

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """The calling thread (and the threads and processes it starts) in the namespace."""
        libc = ctypes.CDLL(None, use_errno=True)
        with Path("/proc/thread-self/ns/net").open() as home, self.path.open() as there:
            if libc.setns(there.fileno(), CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {self.name} failed")
            try:
                yield
            finally:
                if libc.setns(home.fileno(), CLONE_NEWNET) != 0:  # pragma: no cover
                    raise OSError(ctypes.get_errno(), "setns back failed")

    def delete(self) -> None:
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True, check=False)
