"""Where every CPU went during a stop (``bench_stop.py --perf``, issue 26): ``perf record``
of the whole machine, switched on only around the stop, then the samples by process (ranks,
guardians, kernel, others), kernel functions that say where exits spend (inclusive), and the
top symbols."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path


class Perf:
    """``perf record`` of every CPU (software clock, call graphs), started ahead and switched
    on only around the stop (``--control``: its start-up, which reads every process's
    mappings, takes seconds with hundreds of ranks). ``None`` from :meth:`start` without perf."""

    def __init__(self, folder: Path, perf: str) -> None:
        self.folder = folder
        ctl, ack = folder / "perf.ctl", folder / "perf.ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        self.proc = subprocess.Popen(  # noqa: S603
            [perf, "record", "-a", "-g", "-F", "999", "-e", "cpu-clock", "-D", "-1",
             "--control", f"fifo:{ctl},{ack}", "-o", str(folder / "perf.data")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.ctl = ctl.open("w")
        self.ack = ack.open()

    @classmethod
    def start(cls, folder: Path) -> Perf | None:
        perf = shutil.which("perf")
        return None if perf is None else cls(folder, perf)

    def _say(self, what: str) -> None:
        self.ctl.write(what + "\n")
        self.ctl.flush()
        self.ack.readline()

    def enable(self) -> None:
        self._say("enable")

    def finish(self, kinds: dict[str, list[int]]) -> list[str]:
        """Switched off and written; where the CPUs of ``kinds``' pids went."""
        self._say("disable")
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)
        self.ctl.close()
        self.ack.close()
        return perf_report(self.folder, kinds)


# Kernel functions whose inclusive share says where a stop's CPU goes: the exits, the memory
# they free, lock contention (a slow path), the files they close (a GPU driver's among them).
PERF_KEYS = (
    "do_exit", "exit_mmap", "unmap_vmas", "free_pages_and_swap_cache", "free_pcppages_bulk",
    "native_queued_spin_lock_slowpath", "__pv_queued_spin_lock_slowpath",
    "rwsem_down_write_slowpath", "osq_lock", "exit_files", "nvidia_close", "release_task",
    "proc_flush_pid", "exit_notify", "do_wait", "unix_release_sock", "schedule",
)  # fmt: skip


def _perf(data: Path, *args: str) -> list[str]:
    cmd = [shutil.which("perf") or "perf", "report", "-i", str(data), "--stdio", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout  # noqa: S603
    return [line for line in out.splitlines() if line.strip() and not line.startswith("#")]


def perf_report(folder: Path, kinds: dict[str, list[int]], top: int = 25) -> list[str]:
    """Where the CPUs went during the stop in the processes of ``kinds`` (ranks, guardians,
    the kernel: pids): each kind's share of the samples, the kernel functions of
    :data:`PERF_KEYS` (inclusive), the top symbols (own time). The record is kept (in ``$OUT``
    where that is set, else the temporary directory) for ``perf report -g -i``."""
    data = folder / "perf.data"
    if not data.exists():
        return ["(no perf record)"]
    pids = [p for group in kinds.values() for p in group]
    kept = Path(os.environ.get("OUT") or tempfile.gettempdir()) / f"perf-stop-{os.getpid()}.data"
    shutil.copy(data, kept)
    only = ("--pid", ",".join(map(str, pids)))
    kind_of = {p: kind for kind, group in kinds.items() for p in group}
    shares: dict[str, int] = {}
    script = [shutil.which("perf") or "perf", "script", "-i", str(data), "-F", "pid"]
    samples = subprocess.run(script, capture_output=True, text=True, check=False).stdout  # noqa: S603
    for word in samples.split():  # (a sample's process, its thread group: not the thread)
        with contextlib.suppress(ValueError):
            kind = kind_of.get(int(word), "others")
            shares[kind] = shares.get(kind, 0) + 1
    total = sum(shares.values()) or 1
    keys = [
        f"{line.split()[0]} {line.split()[-1]}"
        for line in _perf(data, "--children", "--sort", "sym", "-g", "none", *only)
        if line.split()[-1] in PERF_KEYS
    ]
    own = _perf(data, "--no-children", "--sort", "comm,dso,sym", "-g", "none", *only)
    return [
        "",
        f"perf (record kept: {kept}), the samples of the ranks, their guardians and the kernel "
        "during the stop; all samples by process "
        + ", ".join(f"{kind} {100 * k / total:.1f} %" for kind, k in sorted(shares.items())),
        "inclusive (children): " + (", ".join(dict.fromkeys(keys)) or "none of the listed"),
        "own time (comm / object / symbol):",
        *own[:top],
    ]
