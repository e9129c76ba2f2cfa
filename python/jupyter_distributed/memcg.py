"""A process's memory cgroup and the kernel's word on out-of-memory kills (standard library only).

Shared by a rank, which samples its cgroup's limit and counters with each heartbeat, and the
kernel, which reads them again when a rank dies by SIGKILL to tell an out-of-memory kill from a
plain ``kill -9``. Three witnesses, strongest first:

- the kernel log (``/dev/kmsg``, where readable): ``Killed process <pid>`` after the rank started;
- the cgroup's OOM-kill counter, grown since the rank's last sample: cgroup v2's
  ``memory.events`` ``oom_kill``, cgroup v1's ``memory.oom_control`` ``oom_kill`` line;
- cgroup v1 without that line: ``memory.failcnt`` grown while the rank's RSS was near the limit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

MiB = 2**20
# an RSS this close to the limit just before a SIGKILL makes a grown failcnt an OOM kill
NEAR_LIMIT = 0.9
_KILLED = re.compile(r"Killed process (\d+)")
_RSS = re.compile(r"(?:anon|file|shmem)-rss:(\d+)kB")
_NO_LIMIT = 2**60  # cgroup v1 says "no limit" with a huge number


@dataclass(frozen=True)
class Counters:
    """A memory cgroup's limit and counters as the kernel keeps them (None: not kept)."""

    limit_mb: float | None = None
    oom_kills: int | None = None
    failcnt: int | None = None


@dataclass(frozen=True)
class MemorySample:
    """A rank's memory as its last heartbeat gave it: its RSS, the limit that applies to it (its
    cgroup's, else the machine's), and its cgroup with the counters read then."""

    rss_mb: float
    limit_mb: float | None = None
    cgroup: str = ""
    counters: Counters = Counters()


def cgroup_dir(pid: str = "self") -> str:
    """The directory of the memory cgroup of process ``pid`` ("" where none is mounted):
    cgroup v1's ``memory`` hierarchy, else v2's unified one when it has the memory controller.
    Read each time (a process may be moved to another cgroup); worked out once per content."""
    return _cgroup_of(_read(f"/proc/{pid}/cgroup"))


@functools.lru_cache(maxsize=8)
def _cgroup_of(text: str) -> str:
    where = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["v2"]:
            where[name] = path
    for names, mount in _mounts():
        key = "v2" if names == "cgroup2" else "memory" if "memory" in names.split(",") else ""
        if not key or key not in where:
            continue
        directory = mount + where[key]
        if key == "memory" or Path(directory, "memory.events").exists():
            return directory
    return ""


@functools.cache
def _mounts() -> list[tuple[str, str]]:
    """(options or "cgroup2", mount point) of each cgroup file system whose root is mounted."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            dash = fields.index("-")
            if fields[3] != "/" or fields[dash + 1] not in ("cgroup", "cgroup2"):
                continue
            kind = "cgroup2" if fields[dash + 1] == "cgroup2" else fields[dash + 3]
            out.append((kind, fields[4]))
    out.sort(key=lambda m: m[0] == "cgroup2")  # v1's memory hierarchy first
    return out


def counters(directory: str) -> Counters:
    """The limit and OOM counters of the memory cgroup at ``directory`` (v1 or v2): a few small
    reads with each heartbeat of every rank, so plain ``os`` calls (a third of ``pathlib``'s
    CPU)."""
    if not directory:
        return Counters()
    if _v2(directory):
        events = _fields(f"{directory}/memory.events")
        limit = _read(f"{directory}/memory.max")
        return Counters(_mb(limit), events.get("oom_kill"), None)
    oom = _fields(f"{directory}/memory.oom_control")
    limit = _read(f"{directory}/memory.limit_in_bytes")
    failcnt = _read(f"{directory}/memory.failcnt")
    return Counters(_mb(limit), oom.get("oom_kill"), int(failcnt) if failcnt.isdigit() else None)


@functools.lru_cache(maxsize=8)
def _v2(directory: str) -> bool:
    """Whether the memory cgroup at ``directory`` is cgroup v2's (it has ``memory.events``)."""
    return Path(directory, "memory.events").exists()


def _read(path: str | Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


def _fields(path: str | Path) -> dict[str, int]:
    out = {}
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[name] = int(value)
    return out


def _mb(limit: str) -> float | None:
    if not limit.isdigit() or int(limit) >= _NO_LIMIT:
        return None  # "max" (v2) or v1's huge number: no limit of its own
    return int(limit) / MiB


def memory_total_mb() -> float | None:
    """The machine's memory (``MemTotal``), the limit where no cgroup sets one."""
    for line in _read(Path("/proc/meminfo")).splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024
    return None


def kernel_log_killed(since: float, kmsg: str = "/dev/kmsg") -> dict[int, float | None] | None:
    """The pids the kernel log says the OOM killer killed at or after ``since`` (seconds of
    ``CLOCK_MONOTONIC``, the log's clock), each with its RSS in MiB when killed where the log
    gives it; None where the log cannot be read."""
    try:
        fd = os.open(kmsg, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    pids: dict[int, float | None] = {}
    try:
        while True:
            try:
                record = os.read(fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:  # the end of the log
                break
            except OSError:  # EPIPE: a record was overwritten while reading; read on
                continue
            if not record:
                break
            head, _, text = record.partition(";")
            parts = head.split(",")
            if len(parts) >= 3 and parts[2].isdigit() and int(parts[2]) / 1e6 < since:
                continue
            if m := _KILLED.search(text):
                rss = [int(kb) for kb in _RSS.findall(text)]
                pids[int(m.group(1))] = sum(rss) / 1024 if rss else None
    finally:
        os.close(fd)
    return pids
