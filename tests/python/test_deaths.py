"""The cause of a rank's death, through a real shell and real ranks.

An out-of-memory kill happens for real, in a small memory cgroup the test creates and moves
rank 1 into (:mod:`.cgroups`); a plain ``kill -9`` must not read as one. A segfault shows the
stack faulthandler wrote. GPU samples and a CUDA out-of-memory error use a fake NVML module on
the ranks' path and fake torch.cuda functions in the cell: there is no GPU here.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.errors import RunFailed
from jupyter_distributed.server.api import History, Query
from jupyter_distributed.session import Session

from . import cgroups
from .cgroups import memory_cgroup  # noqa: F401

pytestmark = pytest.mark.timeout(180)


def _cluster(shell: Any) -> Any:
    session: Session = shell.user_ns["_jd_session"]
    return session.live["local"].cluster


def _failed(res: Any) -> tuple[RunFailed, str]:
    assert isinstance(res.error_in_exec, RunFailed), res.error_in_exec
    return res.error_in_exec, "\n".join(res.error_in_exec._render_traceback_())


def _into(shell: Any, cgroup: Path, rank: int) -> None:
    """Rank ``rank`` into ``cgroup``, and its heartbeat has said so (the kernel then knows
    the cgroup whose counters to read when it dies)."""
    cluster = _cluster(shell)
    cgroups.move(cgroup, cluster.info[rank].pid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        memory = cluster.info[rank].memory
        if memory is not None and memory.cgroup == str(cgroup):
            return
        time.sleep(0.05)
    pytest.fail(f"rank {rank}'s heartbeat never named {cgroup}")


def _when_line(shell: Any, rank: int, line: str, act: Any) -> threading.Thread:
    """``act()`` once rank ``rank``'s ``line`` has reached the kernel (so that the rank dies
    where the test says, after that line)."""
    info = _cluster(shell).info[rank]

    def wait() -> None:
        deadline = time.monotonic() + 60
        while line not in info.lines and time.monotonic() < deadline:
            time.sleep(0.02)
        act()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_a_rank_past_its_memory_limit_is_killed_by_the_oom_killer(
    shell: Any,
    memory_cgroup: Path,  # noqa: F811
) -> None:
    assert shell.run_cell("%%distributed -n 2\nx = rank").success
    _into(shell, memory_cgroup, 1)
    res = shell.run_cell(
        "%%distributed -n 2\n"
        "print('allocating on', rank)\n"
        "if rank == 1:\n"
        "    chunks = [b'\\x01' * (16 << 20) for _ in range(64)]  # 1 GiB: past the 160 MiB\n"
    )
    error, shown = _failed(res)
    assert error.root.rank == 1
    assert error.root.cause.startswith("the out-of-memory killer (RSS ")
    assert "rank 1 on " in error.headline and "was killed by the out-of-memory killer" in shown
    assert " of 160 MiB " in error.root.cause  # against the cgroup's limit
    assert "  | allocating on 1" in shown  # its last lines beside the cause
    assert shell.run_cell("%%distributed -n 2\nprint('a new cluster')").success


def test_a_plain_kill_9_is_not_an_oom_kill(shell: Any, memory_cgroup: Path) -> None:  # noqa: F811
    """In the same small cgroup, with its counters readable: nothing moved them."""
    assert shell.run_cell("%%distributed -n 2\nx = rank").success
    _into(shell, memory_cgroup, 1)
    pid = _cluster(shell).info[1].pid
    killer = _when_line(shell, 1, "waiting 1", lambda: os.kill(pid, signal.SIGKILL))
    res = shell.run_cell(
        "%%distributed -n 2\nimport time\nprint('waiting', rank)\n"
        "if rank == 1:\n    time.sleep(120)\n"
    )
    killer.join(10)
    error, shown = _failed(res)
    assert error.root.rank == 1 and error.root.signal == signal.SIGKILL
    assert error.root.cause == ""
    assert "was killed by SIGKILL" in error.headline
    assert "out-of-memory" not in shown
    assert "  | waiting 1" in shown


def test_rlimit_as_gives_a_memory_error_not_an_oom_kill(shell: Any) -> None:
    res = shell.run_cell(
        "%%distributed -n 2\n"
        "import resource\n"
        "if rank == 1:\n"
        "    soft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, hard))\n"
        "    try:\n"
        "        big = bytearray(4 << 30)\n"
        "    finally:\n"
        "        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))\n"
    )
    error, shown = _failed(res)
    assert error.root.kind == "exception" and error.root.ename == "MemoryError"
    assert "out-of-memory killer" not in shown
    assert _cluster(shell).alive  # the rank lives on


def test_a_segfault_shows_the_stack_faulthandler_wrote(shell: Any, tmp_path: Path) -> None:
    assert shell.run_cell("%%distributed -n 2\nx = rank").success
    flag = tmp_path / "crash now"
    waiter = _when_line(shell, 1, "before the crash", flag.touch)
    res = shell.run_cell(
        "%%distributed -n 2\nimport ctypes, os, time\nprint('before the crash')\n"
        f"while rank == 1 and not os.path.exists({str(flag)!r}):\n    time.sleep(0.01)\n"
        "if rank == 1:\n    ctypes.string_at(0)\n"
    )
    waiter.join(10)
    error, shown = _failed(res)
    assert error.root.rank == 1 and error.root.signal == signal.SIGSEGV
    assert "was killed by SIGSEGV" in error.headline
    assert "Fatal Python error: Segmentation fault" in shown
    assert "    ctypes.string_at(0)" in shown  # the cell's line, from the kernel's copy
    assert 'File "<cell ' in shown and "line 6, in <module>" in shown
    assert "  | before the crash" in shown


FAKE_NVML = '''
"""A fake NVML (nvidia-ml-py's pynvml): one GPU, on which this process uses 512 MiB."""
import os
from types import SimpleNamespace


class NVMLError(Exception):
    pass


inits = 0  # NVML clients this process started


def nvmlInit():
    global inits
    inits += 1


def nvmlDeviceGetCount():
    return 1


def nvmlDeviceGetHandleByIndex(i):
    return ("gpu", i)


def nvmlDeviceGetComputeRunningProcesses(handle):
    other = SimpleNamespace(pid=1, usedGpuMemory=9 << 30)
    return [other, SimpleNamespace(pid=os.getpid(), usedGpuMemory=512 << 20)]


def nvmlDeviceGetProcessUtilization(handle, last_seen):
    raise NVMLError("Not Supported")


def nvmlDeviceGetUtilizationRates(handle):
    return SimpleNamespace(gpu=37, memory=5)
'''

CUDA_OOM_CELL = """
import time
from jupyter_distributed.worker import sampler
from jupyter_distributed.worker.sampler import GPU
sampler.gpu_open = lambda fd_dir="": True  # (as once a CUDA context holds /dev/nvidia0)
t0, deadline = time.time(), time.monotonic() + 30
while not (GPU.recent and GPU.recent[-1][0] > t0) and time.monotonic() < deadline:
    time.sleep(0.05)  # a heartbeat of this run has its GPU sample
import torch
GiB = 2**30
torch.cuda.current_device = lambda: 0
torch.cuda.memory_allocated = lambda d=None: 7 * GiB
torch.cuda.memory_reserved = lambda d=None: 7.5 * GiB
torch.cuda.mem_get_info = lambda d=None: (GiB // 4, 8 * GiB)
torch.cuda.memory_stats = lambda d=None: {"allocated_bytes.all.peak": 7.75 * GiB}
if rank == 1:
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 ...")
"""


def test_gpu_samples_from_nvml_and_a_cuda_oom_memory_picture(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    _fake_nvml(tmp_path, monkeypatch)
    res = shell.run_cell("%%distributed -n 2\n" + CUDA_OOM_CELL)
    error, shown = _failed(res)
    assert error.root.rank == 1 and error.root.ename == "OutOfMemoryError"
    assert (
        "GPU memory on cuda:0: 7.00 GiB allocated (peak 7.75 GiB), 7.50 GiB reserved by torch, "
        "0.25 GiB free of 8.00 GiB; the request: 2.00 GiB"
    ) in shown
    assert "last GPU samples of this rank: " in shown and " 0.50 GiB, 37 % busy" in shown
    # the system samples (tiles and plots) have this process' GPU memory and use from NVML
    session: Session = shell.user_ns["_jd_session"]
    run_id = session.store.runs(limit=1)[0].id
    gpu = [m.values for _, m in session.store.metrics(run_id) if "sys.gpu_mem_mb" in m.values]
    assert gpu and all(v["sys.gpu_mem_mb"] == 512 and v["sys.gpu_util"] == 37 for v in gpu)
    # ... and the server's metrics rows, which the panel's tiles and system plots read
    page = History(session.store).metrics(run_id, Query({}))
    rows = [s for s in page["samples"] if "sys.gpu_mem_mb" in s["values"]]
    assert {s["rank"] for s in rows} == {0, 1}
    assert {(s["values"]["sys.gpu_mem_mb"], s["values"]["sys.gpu_util"]) for s in rows} == {
        (512, 37)
    }


def _fake_nvml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake_nvml"
    fake.mkdir()
    (fake / "pynvml.py").write_text(FAKE_NVML)
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", f"{fake}{os.pathsep}{path}" if path else str(fake))


OPENS_A_GPU = """
import time, pynvml
from jupyter_distributed.worker import sampler
sampler.gpu_open = lambda fd_dir="": True  # (as once a CUDA context holds /dev/nvidia0)
deadline = time.monotonic() + 30
while sampler.GPU.nvml is None and time.monotonic() < deadline:
    time.sleep(0.05)  # the next heartbeat's sample
inits = pynvml.inits
"""


def test_nvml_starts_only_once_a_rank_opens_a_gpu(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rank that never opens a GPU device starts no NVML client (a thousand idle ranks each
    held one on a GPU machine: the driver's devices opened, and released as they all exit at a
    stop); one that does has its GPU samples from its next heartbeat."""
    _fake_nvml(tmp_path, monkeypatch)
    idle = "%%distributed -n 2 --pull inits\nimport time, pynvml\ntime.sleep(1.5)\n"
    shell.run_cell(idle + "inits = pynvml.inits")
    assert shell.user_ns["inits"] == [0, 0]  # (two heartbeats each: no GPU device open)
    shell.run_cell("%%distributed -n 2 --pull inits\n" + OPENS_A_GPU)
    assert shell.user_ns["inits"] == [1, 1]
    session: Session = shell.user_ns["_jd_session"]
    shell.run_cell("%%distributed -n 2\nimport time\ntime.sleep(1.5)")
    run_id = session.store.runs(limit=1)[0].id
    gpu = [m.values for _, m in session.store.metrics(run_id) if "sys.gpu_mem_mb" in m.values]
    assert gpu and all(v["sys.gpu_mem_mb"] == 512 for v in gpu)
