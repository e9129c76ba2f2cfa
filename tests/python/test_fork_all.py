"""Every local rank is forked from a fork server that imported pyzmq and the rank's code once
(``DistributedLocal.fork = 'all'``, the default), and starts as a spawned rank would: in the
kernel's working directory now, with its environment at launch, in a session of its own.
``'never'`` spawns every rank with the kernel's Python again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from traitlets import TraitError

from jupyter_distributed.backends.local.options import DistributedLocal, LocalOptions
from jupyter_distributed.cluster import zygote
from jupyter_distributed.errors import SpecError
from jupyter_distributed.pids import proc_end

from .core_helpers import (
    shell,  # noqa: F401 (the fixture)
)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's"),
]

FACTS = (
    "%%distributed -n 2 --pull facts\n"
    "import os, sys\n"
    "import helper_here\n"
    "facts = dict(parent=os.getppid(), cwd=os.getcwd(), path0=sys.path[0],\n"
    "    helper=helper_here.VALUE, env=os.environ.get('JD_AFTER_START'),\n"
    "    session=os.getsid(0) == os.getpid(), zmq='zmq' in sys.modules)"
)


def test_a_plain_rank_is_forked_where_the_kernel_is_now(shell: Any, tmp_path: Path) -> None:  # noqa: F811
    first = shell.run_cell("%%distributed -n 2\npass")  # starts the fork server here
    assert first.error_in_exec is None, first.error_in_exec
    shell.run_line_magic("distributed", "stop")
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "helper_here.py").write_text("VALUE = 7\n")
    here = Path.cwd()
    os.environ["JD_AFTER_START"] = "1"  # set after the fork server started
    os.chdir(moved)  # what %cd does, after the fork server started
    try:
        result = shell.run_cell(FACTS)
        assert result.error_in_exec is None, result.error_in_exec
        for f in shell.user_ns["facts"]:
            assert f["parent"] != os.getpid()  # forked by the fork server, not the kernel
            assert f["cwd"] == str(moved) and f["path0"] == str(moved)  # as `python -m` there
            assert f["helper"] == 7 and f["env"] == "1" and f["session"] and f["zmq"]
    finally:
        os.chdir(here)
        os.environ.pop("JD_AFTER_START", None)
        shell.user_ns["_jd_session"].shutdown()


def test_fork_never_spawns_every_rank_from_the_kernel(shell: Any, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "helper_here.py").write_text("VALUE = 7\n")
    here = Path.cwd()
    os.chdir(tmp_path)
    shell.run_line_magic("config", "DistributedLocal.fork = 'never'")
    try:
        result = shell.run_cell(FACTS)
        assert result.error_in_exec is None, result.error_in_exec
        assert [f["parent"] for f in shell.user_ns["facts"]] == [os.getpid()] * 2
    finally:
        os.chdir(here)
        shell.run_line_magic("config", "DistributedLocal.fork = 'all'")  # (the shell's config)
        shell.user_ns["_jd_session"].shutdown()


def test_a_bad_fork_setting_is_one_line() -> None:
    with pytest.raises(SpecError, match=r"DistributedLocal\.fork is 'sometimes'"):
        LocalOptions(fork="sometimes")
    with pytest.raises(TraitError):
        DistributedLocal(fork="sometimes")


def test_what_a_process_reads_as_it_starts_is_the_ranks_own(shell: Any) -> None:  # noqa: F811
    """``--env PYTHONHASHSEED=0`` holds in a forked rank as in a spawned one, and so does a
    variable the C library reads as the process starts (``MALLOC_ARENA_MAX``): the ranks' fork
    server started with them (another server than the one without)."""
    want = subprocess.run(
        [sys.executable, "-c", "print(hash('jd'))"],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        result = shell.run_cell(
            "%%distributed -n 2 --env PYTHONHASHSEED=0 --env MALLOC_ARENA_MAX=2 --pull seen\n"
            "import os\n"
            "started = open('/proc/self/environ', 'rb').read().split(b'\\0')\n"
            "seen = (hash('jd'), os.getppid(), b'MALLOC_ARENA_MAX=2' in started)"
        )
        assert result.error_in_exec is None, result.error_in_exec
        for seed, parent, malloc in shell.user_ns["seen"]:
            assert str(seed) == want and parent != os.getpid() and malloc
    finally:
        shell.user_ns["_jd_session"].shutdown()


def test_a_zombie_rank_gives_its_exit_before_the_fork_server_reaps_it() -> None:
    """A look reads a forked rank's end from /proc while it is a zombie: the fork server's
    report may wait for a core behind hundreds of busy ranks."""

    pid = os.fork()
    if pid == 0:
        os._exit(3)
    deadline = time.monotonic() + 10
    while not proc_end(pid)[0] and time.monotonic() < deadline:
        time.sleep(0.01)
    ended, status = proc_end(pid)
    assert ended and status is not None and os.waitstatus_to_exitcode(status) == 3
    os.waitpid(pid, 0)
    assert proc_end(pid) == (True, None)  # reaped: gone
    assert proc_end(os.getpid()) == (False, None)


def test_dry_run_says_the_ranks_are_forked(shell: Any, capsys: Any) -> None:  # noqa: F811
    shell.run_cell("%%distributed -n 2 --dry-run\npass")
    assert "note: each rank is forked from the kernel's fork server" in capsys.readouterr().out
    shell.run_line_magic("config", "DistributedLocal.fork = 'never'")
    try:
        shell.run_cell("%%distributed -n 2 --dry-run\npass")
    finally:
        shell.run_line_magic("config", "DistributedLocal.fork = 'all'")  # (the shell's config)
    assert "forked" not in capsys.readouterr().out


def test_a_kernel_keeps_a_few_fork_servers_and_spawns_past_them(monkeypatch: Any) -> None:
    """Each value of a variable read as a process starts needs a fork server of its own (a
    sweep over ``--env PYTHONHASHSEED``): past ``MAX_SERVERS`` the ranks are spawned, not a
    fork server (~300 MB with torch) kept for each."""
    monkeypatch.setattr(zygote, "_servers", {})
    monkeypatch.setattr(zygote, "_failed", set())
    made = [
        zygote.fork_server({**os.environ, "PYTHONHASHSEED": str(seed)}, zygote.LIGHT)
        for seed in range(zygote.MAX_SERVERS + 1)
    ]
    try:
        assert all(made[: zygote.MAX_SERVERS]) and made[-1] is None
        again = zygote.fork_server({**os.environ, "PYTHONHASHSEED": "0"}, zygote.LIGHT)
        assert again is made[0]  # (the same values: the same server)
    finally:
        zygote.stop_fork_servers()


def test_status_shows_the_fork_server_while_it_runs(shell: Any, capsys: Any) -> None:  # noqa: F811
    """``%distributed status`` names the kernel's fork server (it outlives the clusters)."""
    zygote.stop_fork_servers()
    shell.run_line_magic("distributed", "status")
    assert "fork server" not in capsys.readouterr().out
    try:
        assert shell.run_cell("%%distributed -n 2 --quiet\npass").error_in_exec is None
        shell.run_line_magic("distributed", "stop")
        capsys.readouterr()
        shell.run_line_magic("distributed", "status")
        out = capsys.readouterr().out
        (pid,) = zygote.server_pids()
        assert out.startswith("No cluster is running.")
        assert f"fork server pid {pid}: imported zmq and the rank's code, " in out
        assert "MB resident (shared with the ranks and relays forked from it)" in out
    finally:
        shell.user_ns["_jd_session"].shutdown()
