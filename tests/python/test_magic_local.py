"""``%%distributed`` on the local backend, through a real IPython shell and real processes."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

import pytest
import zmq
from IPython.core.error import UsageError

from jupyter_distributed.errors import RunFailed
from jupyter_distributed.pids import pid_alive

pytestmark = pytest.mark.timeout(120)


def run(ip: Any, line: str, cell: str) -> Any:
    return ip.run_cell(f"%%distributed {line}\n{cell}")


def test_every_rank_runs_and_output_is_tagged(shell: Any, capsys: Any) -> None:
    res = run(shell, "-n 3", "print('hello', rank, world_size, local_rank, node_rank)\nrank * 10")
    assert res.success
    out = capsys.readouterr().out
    for r in range(3):
        assert f"[rank {r}] hello {r} 3 {r} 0" in out
        assert f"Out[rank {r}]: {r * 10}" in out


def test_namespace_persists_and_settings_change_restarts(shell: Any, capsys: Any) -> None:
    run(shell, "-n 2", "import os\nx = rank + 100\npid = os.getpid()")
    run(shell, "-n 2 --pull x,pid", "x += 1")
    assert shell.user_ns["x"] == [101, 102]
    first = shell.user_ns["pid"]
    run(shell, "-n 3 --pull pid", "import os\npid = os.getpid()")
    err = capsys.readouterr().err
    assert "settings changed (procs_per_node); restarting the cluster" in err
    assert not set(first) & set(shell.user_ns["pid"])
    assert not any(pid_alive(p) for p in first)


def test_push_pull_and_targets(shell: Any) -> None:
    import numpy as np

    shell.user_ns["arr"] = np.arange(1_000_000, dtype=np.float64)
    shell.user_ns["scale"] = 3
    assert run(
        shell,
        "-n 4 --push arr,scale --pull part --targets 1,3",
        "part = float(arr[rank::world_size].sum()) * scale",
    ).success
    arr = shell.user_ns["arr"]
    assert shell.user_ns["part"] == [float(arr[1::4].sum()) * 3, float(arr[3::4].sum()) * 3]


def test_torchrun_environment(shell: Any) -> None:
    run(
        shell,
        "--nodes 2 --procs-per-node 2 --env FOO=bar --pull env",
        "import os\nenv = {k: os.environ[k] for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', "
        "'LOCAL_WORLD_SIZE', 'GROUP_RANK', 'MASTER_ADDR', 'MASTER_PORT', 'FOO')}",
    )
    envs = shell.user_ns["env"]
    assert [e["RANK"] for e in envs] == ["0", "1", "2", "3"]
    assert [e["GROUP_RANK"] for e in envs] == ["0", "0", "1", "1"]
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1", "0", "1"]
    assert {e["MASTER_ADDR"] for e in envs} == {"127.0.0.1"}
    assert len({e["MASTER_PORT"] for e in envs}) == 1
    assert {e["FOO"] for e in envs} == {"bar"} and {e["WORLD_SIZE"] for e in envs} == {"4"}


def test_exception_root_cause_first_and_kernel_stays_usable(shell: Any, capsys: Any) -> None:
    res = run(
        shell,
        "-n 3",
        "import time\nif rank == 2:\n    raise ValueError('bad input')\n"
        "time.sleep(0.3)\nif rank == 0:\n    raise KeyError('later')",
    )
    assert isinstance(res.error_in_exec, RunFailed)
    failure = res.error_in_exec
    assert [f.rank for f in failure.failures] == [2, 0]
    assert failure.root.ename == "ValueError" and "bad input" in failure.root.evalue
    rendered = "\n".join(failure._render_traceback_())
    assert "root cause" in rendered and "raise ValueError" in rendered
    assert "runtime.py" not in rendered
    assert run(shell, "-n 3", "rank").success


def test_dead_rank_is_reported_with_exit_code_and_signal(shell: Any) -> None:
    t0 = time.monotonic()
    res = run(shell, "-n 2", "import os, time\nif rank == 1:\n    os._exit(3)\ntime.sleep(60)")
    assert time.monotonic() - t0 < 30  # it did not wait for rank 0's sleep
    assert isinstance(res.error_in_exec, RunFailed)
    assert "rank 1" in res.error_in_exec.root.summary
    assert "exited with code 3" in res.error_in_exec.root.summary
    res = run(
        shell, "-n 2", "import os, signal\nif rank == 0:\n    os.kill(os.getpid(), signal.SIGKILL)"
    )
    assert "rank 0" in str(res.error_in_exec) and "killed by SIGKILL" in str(res.error_in_exec)
    assert run(shell, "-n 2", "rank").success  # a new cluster


def test_ctrl_c_raises_keyboard_interrupt_here_however_the_suite_was_started() -> None:
    """The stop tests send SIGINT to this process, as a kernel gets it from the stop button
    (conftest restores Python's handler where ``make test &`` left SIGINT ignored)."""
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_stop_button_interrupts_every_rank(shell: Any, capsys: Any) -> None:
    run(shell, "-n 2", "import os\npid = os.getpid()\nkeep = 'kept'")
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    res = run(shell, "-n 2", "import time\nfor _ in range(600):\n    time.sleep(0.1)")
    assert isinstance(res.error_in_exec, KeyboardInterrupt)
    assert time.monotonic() - t0 < 30
    shown = capsys.readouterr().out
    assert "KeyboardInterrupt: the cell was interrupted on every rank; the ranks keep" in shown
    assert "supervise.py" not in shown and "tracker.py" not in shown  # no kernel frames
    # the ranks yielded: same processes, variables kept
    run(shell, "-n 2 --pull keep", "keep")
    assert shell.user_ns["keep"] == ["kept", "kept"]


def test_rank_that_ignores_interrupt_is_killed(shell: Any, capsys: Any) -> None:
    run(shell, "-n 2 --pull pid", "import os\npid = os.getpid()")
    pids = shell.user_ns["pid"]
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    res = run(
        shell,
        "-n 2",
        "import time\nwhile True:\n    try:\n        time.sleep(0.1)\n"
        "    except KeyboardInterrupt:\n        pass",
    )
    assert isinstance(res.error_in_exec, KeyboardInterrupt)
    assert "did not stop within" in capsys.readouterr().err
    assert not any(pid_alive(p) for p in pids)


def test_timeout(shell: Any) -> None:
    res = run(shell, "-n 2 --timeout 1", "import time\ntime.sleep(60)")
    assert isinstance(res.error_in_exec, RunFailed)
    assert "exceeded --timeout 1s" in str(res.error_in_exec)
    assert all(f.kind == "timeout" for f in res.error_in_exec.failures)


def test_fd_level_output_and_stderr_flood_never_blocks(shell: Any, capsys: Any) -> None:
    session = shell.user_ns["_jd_session"]
    res = run(
        shell,
        "-n 2 --quiet",
        "import os, sys\nos.system('echo from a child process')\n"
        "os.write(2, b'raw fd write\\n')\n"
        "for i in range(100_000):\n    sys.stderr.write(f'noise {i} ' + 'x' * 40 + '\\n')\n"
        "print('end')",
    )
    assert res.success
    run_id = session.store.runs(limit=1)[0].id
    for rank in (0, 1):
        lines = [ln.text for ln in session.store.logs(run_id, ranks=[rank], limit=300_000)]
        assert "from a child process" in lines and "raw fd write" in lines
        # a line the writer left half-written for a while may be stored in two pieces
        stderr = "".join(
            ln.text
            for ln in session.store.logs(run_id, ranks=[rank], stream="stderr", limit=300_000)
        )
        assert stderr.count("noise ") == 100_000 and "noise 99999 " in stderr
        assert "end" in lines


def test_display_is_rate_limited_but_nothing_is_lost(shell: Any, capsys: Any) -> None:
    session = shell.user_ns["_jd_session"]
    assert run(shell, "-n 1", "for i in range(50_000):\n    print('y' * 60, i)").success
    captured = capsys.readouterr()
    assert "were not shown to keep the notebook responsive" in captured.err
    run_id = session.store.runs(limit=1)[0].id
    stored = "".join(ln.text + "\n" for ln in session.store.logs(run_id, limit=200_000))
    assert stored.replace("\n", "").count("y" * 60) == 50_000


def test_report_is_recorded(shell: Any) -> None:
    session = shell.user_ns["_jd_session"]
    cell = "for i in range(10):\n    report(samples=32, loss=1 / (i + 1))"
    assert run(shell, "-n 2", cell).success
    run_id = session.store.runs(limit=1)[0].id
    samples = [m for _, m in session.store.metrics(run_id) if "samples" in m.values]
    assert len(samples) == 20 and {m.rank for m in samples} == {0, 1}


def test_bad_input_is_one_line(shell: Any) -> None:
    cases = {
        "-n 2 --nodes 2": "give either -n/--nprocs or --nodes/--procs-per-node",
        "-n 0": "-n must be a positive integer",
        "-n 2 --push missing": "--push: name 'missing' is not defined in the notebook",
        "-n 2 --targets 5": "--targets: rank 5 does not exist",
        "-n 2 --strategy magic": "--strategy must be one of",
        "--backend nowhere": "unknown --backend 'nowhere'",
        "-n 2 --no-such-flag": "unrecognized arguments: --no-such-flag",
    }
    for line, message in cases.items():
        with pytest.raises(UsageError, match=message):
            shell.run_cell_magic("distributed", line, "pass")
    shell.user_ns["lock"] = threading.Lock()
    with pytest.raises(UsageError, match="cannot send 'lock' to the ranks"):
        shell.run_cell_magic("distributed", "-n 1 --push lock", "pass")
    assert not shell.user_ns["_jd_session"].live  # nothing was started


def test_dry_run_starts_nothing(shell: Any, capsys: Any) -> None:
    shell.run_cell_magic(
        "distributed",
        "--nodes 2 --procs-per-node 4 --strategy model-parallel "
        "--partitions 2 --tensor-parallel 2 --microbatches 4 --dry-run",
        "pass",
    )
    out = capsys.readouterr().out
    assert "world size:   8 = 2 node(s) × 4 process(es) per node" in out
    assert "2 pipeline stage(s) × 2-way tensor × 2-way data; 4 microbatch(es)" in out
    assert "rank 7   local 3   dp=1 pp=1 tp=1" in out
    assert not shell.user_ns["_jd_session"].live


def test_line_magic_status_runs_logs(shell: Any, capsys: Any) -> None:
    run(shell, "-n 2", "print('visible in logs', rank)")
    capsys.readouterr()
    shell.run_line_magic("distributed", "status")
    shell.run_line_magic("distributed", "runs")
    run_id = shell.user_ns["_jd_session"].store.runs(limit=1)[0].id
    shell.run_line_magic("distributed", f"logs {run_id} --rank 1")
    out = capsys.readouterr().out
    assert "2 rank(s), strategy none, alive" in out
    assert run_id in out and "completed" in out
    assert "[rank 1] visible in logs 1" in out and "[rank 0]" not in out.split(run_id)[-1]
    with pytest.raises(UsageError, match="no run 'nope'"):
        shell.run_line_magic("distributed", "logs nope")
    shell.run_line_magic("distributed", "stop")
    assert "stopped c-" in capsys.readouterr().out


def test_control_channel_rejects_a_client_without_the_secret(shell: Any, caplog: Any) -> None:
    run(shell, "-n 1", "x = 1")
    cluster = shell.user_ns["_jd_session"].live["local"].cluster
    assert cluster.address.startswith("ipc://")  # only this user can connect
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, b"intruder")
    sock.connect(cluster.address)
    with caplog.at_level(logging.WARNING, logger="jupyter_distributed"):
        sock.send_multipart([b"0" * 64, b'{"type":"done","id":"x","run_id":"r","status":"ok"}'])
        deadline = time.monotonic() + 10
        while "rejected" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    sock.close(0)
    ctx.term()
    assert "rejected a message" in caplog.text and "bad signature" in caplog.text
    assert run(shell, "-n 1", "x").success


def test_launch_failure_is_one_line(shell: Any) -> None:
    from jupyter_distributed.errors import LaunchError

    err = LaunchError("rank 0 could not start: boom")
    assert err._render_traceback_() == ["LaunchError: rank 0 could not start: boom"]


def test_ranks_sample_cpu_and_memory_while_a_cell_runs(shell: Any) -> None:
    session = shell.user_ns["_jd_session"]
    assert run(shell, "-n 2", "import time\ntime.sleep(2.5)").success
    run_id = session.store.runs(limit=1)[0].id
    system = [m for _, m in session.store.metrics(run_id) if "sys.rss_mb" in m.values]
    assert {m.rank for m in system} == {0, 1}
    assert all(m.values["sys.rss_mb"] > 1 and "sys.cpu_percent" in m.values for m in system)
    assert all(not k.startswith("sys.gpu") for m in system for k in m.values)  # no GPU here
