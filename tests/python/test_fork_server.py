"""Ranks of a torch strategy come from the kernel's fork server (torch already imported), with
nothing of the kernel in them but its environment at launch, and their exits are still
reported (skipped without torch)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's"),
]


def test_ddp_ranks_are_forked_clean_and_their_death_is_reported(shell: Any) -> None:
    shell.user_ns["kernel_only"] = 42
    first = shell.run_cell("%%distributed -n 2 --strategy ddp\npass")  # starts the fork server
    assert first.error_in_exec is None, first.error_in_exec
    shell.run_line_magic("distributed", "stop")
    os.environ["JD_KERNEL_ONLY"] = "1"  # set after the fork server started, before this launch
    try:
        result = shell.run_cell(
            "%%distributed -n 2 --strategy ddp --pull facts\n"
            "import os, sys, threading\n"
            "facts = dict(parent=os.getppid(), kernel_var='kernel_only' in globals(),\n"
            "    env=os.environ.get('JD_KERNEL_ONLY'), session=os.getsid(0) == os.getpid(),\n"
            "    cuda=sys.modules['torch'].cuda.is_initialized(), rank=os.environ['RANK'])"
        )
        assert result.error_in_exec is None, result.error_in_exec
        facts = shell.user_ns["facts"]
        assert [f["rank"] for f in facts] == ["0", "1"]
        for f in facts:
            assert f["parent"] != os.getpid()  # forked by the fork server, not the kernel
            assert not f["kernel_var"] and not f["cuda"]
            assert f["env"] == "1"  # the kernel's environment at launch, as a spawned rank
            assert f["session"]  # its own session: stop and interrupt reach it and its children

        result = shell.run_cell(
            "%%distributed -n 2 --strategy ddp\nimport os, time\n"
            "if rank == 1:\n    os._exit(3)\ntime.sleep(30)"
        )
        assert "exited with code 3" in str(result.error_in_exec)
    finally:
        os.environ.pop("JD_KERNEL_ONLY", None)
        shell.run_line_magic("distributed", "stop")
    assert _fork_servers(), "the fork server stays up for the kernel's next torch cluster"
    shell.user_ns["_jd_session"].shutdown()  # what the kernel does when it exits
    assert not _fork_servers(), "the fork server outlived the kernel's session"


def test_a_forked_rank_runs_one_thread_as_under_torchrun(shell: Any) -> None:
    if "OMP_NUM_THREADS" in os.environ:
        pytest.skip("OMP_NUM_THREADS is set here: the ranks keep it")
    try:
        result = shell.run_cell(
            "%%distributed -n 2 --strategy ddp --pull threads\n"
            "import os\nthreads = (torch.get_num_threads(), os.environ['OMP_NUM_THREADS'])"
        )
        assert result.error_in_exec is None, result.error_in_exec
        # torch was imported in the fork server before the variable was set: its pool is resized
        assert shell.user_ns["threads"] == [(1, "1")] * 2
    finally:
        shell.user_ns["_jd_session"].shutdown()


def test_a_full_collection_in_a_forked_rank_leaves_torch_shared(shell: Any) -> None:
    """What the fork server imported is frozen out of the garbage collector: a rank's full
    collection neither walks it nor copies its pages (~36 MB of torch's a rank, and ~130 ms a
    collection, without the freeze)."""
    try:
        result = shell.run_cell(
            "%%distributed -n 2 --strategy ddp --pull seen\n"
            "import gc\n"
            "def private():\n"
            "    for line in open('/proc/self/smaps_rollup'):\n"
            "        if line.startswith('Private_Dirty:'):\n"
            "            return int(line.split()[1]) // 1024\n"
            "before = private()\n"
            "gc.collect()\n"
            "seen = (gc.get_freeze_count(), private() - before)"
        )
        assert result.error_in_exec is None, result.error_in_exec
        for frozen, copied_mb in shell.user_ns["seen"]:
            assert frozen > 10_000  # (torch's objects: ~167,000)
            assert copied_mb < 8, f"a collection copied {copied_mb} MB of the fork server's pages"
    finally:
        shell.user_ns["_jd_session"].shutdown()


def _fork_servers() -> list[int]:
    """Live children of this process that are fork servers (Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text().rpartition(")")[2].split()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, IndexError):
            continue
        if (
            stat[0] != "Z"
            and int(stat[1]) == os.getpid()
            and b"jupyter_distributed.worker.zygote" in cmdline
        ):
            found.append(int(proc.name))
    return found
