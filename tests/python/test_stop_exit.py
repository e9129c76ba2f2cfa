"""``%distributed stop`` on idle ranks: each rank leaves quickly (no teardown of every module),
but what a user relies on at exit still happens, spawned or forked from the fork server: its
``atexit`` handlers run, a file a cell left open is flushed, the cell's last line is recorded,
and no process (rank, guardian, zombie) is left."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .core_helpers import shell  # noqa: F401 (the fixture)

pytestmark = pytest.mark.timeout(180)

CELL = """\
import atexit, os, sys
here = {folder!r}
def farewell():
    with open(os.path.join(here, f"atexit-{{rank}}"), "w") as f:
        f.write(str(os.getpid()))
atexit.register(farewell)
unclosed = open(os.path.join(here, f"unclosed-{{rank}}"), "w")
unclosed.write("buffered, never closed")
kin = [os.getpid()] + [int(c) for t in os.listdir("/proc/self/task")
    for c in open(f"/proc/self/task/{{t}}/children").read().split()]
sys.stdout.write(f"last words of {{rank}}")
"""

STRATEGIES = [
    pytest.param("none", id="spawned"),
    pytest.param(
        "ddp",
        id="forked",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("torch") is None, reason="the fork server needs torch"
        ),
    ),
]


def left(pids: set[int], within: float = 15.0) -> set[int]:
    """Of ``pids``, those still in the process table (a zombie counts) after ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.02)
    return {p for p in pids if Path(f"/proc/{p}").exists()}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_stopped_ranks_run_their_atexit_work_and_leave_nothing(
    shell: Any,  # noqa: F811 (the fixture)
    tmp_path: Path,
    strategy: str,
) -> None:
    cell = CELL.format(folder=str(tmp_path))
    result = shell.run_cell(f"%%distributed -n 3 --strategy {strategy} --pull kin\n{cell}")
    assert result.error_in_exec is None, result.error_in_exec
    kin = {pid for family in shell.user_ns["kin"] for pid in family}
    assert len(kin) >= 3  # each rank (and its guardian, where it has one)

    shell.run_line_magic("distributed", "stop")

    for rank in range(3):
        assert (tmp_path / f"atexit-{rank}").exists(), f"rank {rank}'s atexit handler did not run"
        text = (tmp_path / f"unclosed-{rank}").read_text()
        assert text == "buffered, never closed", f"rank {rank}'s open file was not flushed"
    store = shell.user_ns["_jd_session"].store
    run = store.runs(limit=1)[0]
    lines = {(line.rank, line.text) for line in store.logs(run.id)}
    assert lines >= {(r, f"last words of {r}") for r in range(3)}
    assert not left(kin), "a rank, its guardian or a zombie is left after stop"


CHAIN = """\
import atexit, os, time
here = {folder!r}
def farewell():  # each rank's atexit work ends 0.35 s after the rank before it's
    if rank:
        while not os.path.exists(os.path.join(here, f"atexit-{{rank - 1}}")):
            time.sleep(0.01)
        time.sleep(0.35)
    open(os.path.join(here, f"atexit-{{rank}}"), "w").close()
atexit.register(farewell)
"""


def test_a_stop_waits_while_ranks_are_still_leaving(shell: Any, tmp_path: Path) -> None:  # noqa: F811
    """Ranks that leave one after another, each within the stop's grace (1 s) of the one before
    (0.35 s, so a loaded machine's delays keep 0.65 s of margin) but the last well after it
    (1.4 s; as hundreds do on a few cores), all finish their atexit work."""
    result = shell.run_cell(f"%%distributed -n 5\n{CHAIN.format(folder=str(tmp_path))}")
    assert result.error_in_exec is None, result.error_in_exec
    shell.run_line_magic("distributed", "stop")
    done = sorted(p.name for p in tmp_path.glob("atexit-*"))
    assert done == [f"atexit-{r}" for r in range(5)], "a rank was killed while leaving"


GUARDIANS = """\
import os
pid = os.getpid()
guardians = [int(c) for t in os.listdir("/proc/self/task")
    for c in open(f"/proc/self/task/{t}/children").read().split()]
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("fork", ["never", "all"])
def test_a_ranks_guardian_is_a_small_copy_made_before_the_ranks_imports(
    shell: Any,  # noqa: F811 (the fixture)
    fork: str,
) -> None:
    """A spawned rank forks its guardian before it imports ZeroMQ and the rest: the guardian
    holds none of it, so the rank copies few pages on write after the fork, and a stop of
    hundreds of ranks does not free a full copy of each rank twice. A forked rank's imports are
    the fork server's pages, shared by the rank and its guardian: the guardian's own pages stay
    fewer than its rank's."""
    shell.run_line_magic("config", f"DistributedLocal.fork = {fork!r}")
    try:
        result = shell.run_cell(f"%%distributed -n 2 --pull guardians,pid\n{GUARDIANS}")
    finally:
        shell.run_line_magic("config", "DistributedLocal.fork = 'all'")  # (the shell's config)
    assert result.error_in_exec is None, result.error_in_exec
    guardians = [pid for family in shell.user_ns["guardians"] for pid in family]
    assert len(guardians) == 2
    for pid, rank in zip(guardians, shell.user_ns["pid"], strict=True):
        maps = Path(f"/proc/{pid}/maps").read_text()
        if fork == "never":
            assert "zmq" not in maps, f"guardian {pid} is a copy of the rank after its imports"
        else:
            assert _private_mb(pid) < _private_mb(rank), f"guardian {pid} copied its rank"
    shell.run_line_magic("distributed", "stop")
    assert not left(set(guardians)), "a guardian is left after stop"


def _private_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no Private_Dirty for {pid}")
