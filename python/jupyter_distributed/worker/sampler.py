"""A rank's system samples for its heartbeat: RSS, its memory cgroup, and its GPUs.

GPU memory and utilisation come from NVML (``nvidia-ml-py``, ``import pynvml``, optional) for
this process, from the moment it opens a GPU device, whatever framework uses the GPU; where NVML
is absent, from torch once a cell has used CUDA. The last GPU samples are kept for the picture
that follows a CUDA out-of-memory error (:mod:`.cudaoom`).

NVML is started only once the process holds a GPU device open (``/dev/nvidia<N>``: a CUDA
context, whatever the framework): an NVML client opens the driver's devices and allocates in the
driver, which a rank that never uses a GPU should not pay, nor make its machine pay: a thousand
idle ranks each starting one, and the driver releasing each as they all exit at a stop.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from ..memcg import MiB, cgroup_dir, counters, memory_total_mb

RECENT = 5  # GPU samples kept for a CUDA out-of-memory picture
GPU_DEVICE = re.compile(r"/dev/nvidia\d+$")  # a GPU's device file (not nvidiactl, nvidia-uvm)


def gpu_open(fd_dir: str = "/proc/self/fd") -> bool | None:
    """Whether this process holds a GPU device open; None where that cannot be told (no
    ``/proc``)."""
    try:
        fds = list(Path(fd_dir).iterdir())
    except OSError:
        return None
    for fd in fds:
        with contextlib.suppress(OSError):
            if GPU_DEVICE.match(str(fd.readlink())):
                return True
    return False


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mb() -> float:
    try:  # (os calls, not pathlib: with each heartbeat of every rank)
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 256).split()[1]) * _PAGE / MiB
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@functools.cache
def _machine_mb() -> float | None:
    """The machine's memory, read once (a heartbeat a second re-read it; the cgroup is read
    each time: a rank may be moved to another one)."""
    return memory_total_mb()


def memory_sample() -> dict[str, Any]:
    """RSS, the limit that applies (the memory cgroup's, else the machine's), the cgroup and its
    OOM counters: what the kernel needs to tell an out-of-memory kill when this rank dies."""
    directory = cgroup_dir()
    c = counters(directory)
    return {
        "rss_mb": rss_mb(),
        "mem_limit_mb": c.limit_mb or _machine_mb(),
        "cgroup": directory or None,
        "oom_kills": c.oom_kills,
        "failcnt": c.failcnt,
    }


class GpuSampler:
    """This process's GPU memory (MiB) and utilisation (%) through NVML, or torch's view."""

    def __init__(self) -> None:
        self.nvml: Any = None  # NVML, once started
        self.module: Any = None  # pynvml, imported (where installed), NVML not started yet
        self.handles: list[Any] = []
        self.recent: deque[tuple[float, float, float | None]] = deque(maxlen=RECENT)
        self._seen = 0  # NVML's timestamp of the last utilisation sample read

    def start(self) -> None:
        """On the main thread at the rank's start: import NVML's module where it is installed
        (an import on the I/O thread could wait on one the main thread holds); NVML itself
        starts at the first sample that finds a GPU device open (at once where that cannot be
        told)."""
        if importlib.util.find_spec("pynvml") is None:
            return
        try:
            import pynvml  # type: ignore[import-not-found,unused-ignore]
        except Exception:  # noqa: BLE001 - a broken install: no GPU samples
            return
        self.module = pynvml
        if gpu_open() is None:
            self._start_nvml()

    def _start_nvml(self) -> None:
        pynvml, self.module = self.module, None
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception:  # noqa: BLE001 - no driver, no GPU: no GPU samples
            return
        self.nvml = pynvml

    def sample(self, torch_device: int | None) -> dict[str, float]:
        """``gpu_mem_mb`` and, where known, ``gpu_util``; {} without a GPU (or before this
        process opened one)."""
        if self.module is not None and gpu_open():
            self._start_nvml()
        out = self._nvml() if self.nvml is not None else _torch_sample(torch_device)
        if out:
            self.recent.append((time.time(), out["gpu_mem_mb"], out.get("gpu_util")))
        return out

    def _nvml(self) -> dict[str, float]:
        nvml, pid = self.nvml, os.getpid()
        mem, used = 0.0, []
        for handle in self.handles:
            try:
                procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            except nvml.NVMLError:
                continue
            mine = [p for p in procs if p.pid == pid]
            if mine:
                used.append(handle)
                mem += sum(p.usedGpuMemory or 0 for p in mine) / MiB
        if not self.handles:
            return {}
        out = {"gpu_mem_mb": mem}
        utils = [u for h in used if (u := self._util(h, pid)) is not None]
        if utils:
            out["gpu_util"] = max(utils)
        return out

    def _util(self, handle: Any, pid: int) -> float | None:
        """This process's SM use on a device where NVML samples it per process, else the
        device's."""
        nvml = self.nvml
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(handle, self._seen)
            mine = [s for s in samples if s.pid == pid]
            if mine:
                latest = max(mine, key=lambda s: s.timeStamp)
                self._seen = max(self._seen, int(latest.timeStamp))
                return float(latest.smUtil)
        except nvml.NVMLError:
            pass
        with contextlib.suppress(nvml.NVMLError):
            return float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        return None


def _torch_sample(device: int | None) -> dict[str, float]:
    """GPU memory (and utilisation where torch's NVML answers) of this rank's device. ``device``
    is set by the main thread once a cell has used CUDA, so torch is fully imported by then:
    this thread never imports torch (that could deadlock with an import on the main thread)."""
    torch = sys.modules.get("torch")
    if device is None or torch is None:
        return {}
    sample = {"gpu_mem_mb": torch.cuda.memory_allocated(device) / MiB}
    with contextlib.suppress(Exception):  # utilization() needs pynvml; memory is enough
        sample["gpu_util"] = float(torch.cuda.utilization(device))
    return sample


GPU = GpuSampler()  # the rank's one sampler: its heartbeat samples, its CUDA OOM picture reads
