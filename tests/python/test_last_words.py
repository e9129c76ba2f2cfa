"""A rank's last words: what it wrote just before it died is shown under the cell, kept in the
history and named with the cause, not lost with the process.

Through a real shell and real local ranks: a print (or a C-level write to fd 1), then
``os._exit``. Before, the line was lost 8 or 9 times in 10: still in the rank's pipe, or sent on
the cell socket behind the cell's state that the rank's control channel never sent. And the
guardian on its own, in a real process killed with SIGKILL: what the rank's output capture had
not read is left to the kernel in the cluster's directory.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.cluster import leftovers
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RankFailure, RunFailed
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout, RankCoords
from jupyter_distributed.protocol.stacks import left_file
from jupyter_distributed.spec import Spec

from .core_helpers import session_in

pytestmark = pytest.mark.timeout(180)

PYTHON_PATH = str(Path(__file__).resolve().parents[2] / "python")


def _history(shell: Any, run_id: str) -> list[tuple[int, str]]:
    store = shell.user_ns["_jd_session"].store
    return [(line.rank, line.text) for line in store.logs(run_id, limit=1000)]


@pytest.mark.parametrize(
    "last",
    ["print(f'last words {i}')", "os.write(1, f'last words {i}\\n'.encode())"],
    ids=["print", "C-level write"],
)
def test_a_line_written_just_before_os_exit_is_shown_kept_and_named(
    shell: Any, capsys: Any, last: str
) -> None:
    for i in range(3):  # (lost 8 or 9 times in 10 before: three tries catch it)
        code = f"import os\nif rank == 1:\n    i = {i}\n    {last}\n    os._exit(3)\n"
        res = shell.run_cell(f"%%distributed -n 2\n{code}print('ok')")
        out = capsys.readouterr().out
        error = res.error_in_exec
        assert isinstance(error, RunFailed), error
        assert error.root.rank == 1 and "exited with code 3" in error.root.summary
        assert f"[rank 1] last words {i}" in out  # under the cell, before the failure
        assert error.root.last_lines[-1:] == (f"last words {i}",)
        rendered = "\n".join(error._render_traceback_())
        assert f"  | last words {i}" in rendered
        assert (1, f"last words {i}") in _history(shell, error.run_id)


def test_behind_node_relays_the_line_is_kept_in_the_history(tmp_path: Path) -> None:
    # a rank behind a relay sends its output over ZeroMQ: os._exit first sends what its
    # sockets queued; the relay sends a dead rank's held lines up at once (before, 28 of 30
    # were lost, most from the history too). Under the cell it shows unless the kernel ended
    # the cell before the relay's message came (3 of 30 here): the history keeps it then.
    for session in session_in(tmp_path):
        for i in range(3):
            out = io.StringIO()
            spec = Spec(layout=Layout(nodes=2, procs_per_node=1), relays="always")
            code = f"import os\nif rank == 1:\n    print('last words {i}')\n    os._exit(3)\n"
            with pytest.raises(RunFailed) as info:
                session.run_cell(spec, code, {}, view=CellView(out=out, err=out))
            run_id = info.value.run_id
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                lines = [(x.rank, x.text) for x in session.store.logs(run_id, limit=100)]
                if (1, f"last words {i}") in lines:
                    break
                time.sleep(0.05)
            assert (1, f"last words {i}") in lines


GUARDED = """
import os, signal, sys, time
from jupyter_distributed.worker import guard
guard.guard_group()
(_, out), (_, err) = guard.capture_pipes()  # (nobody reads them here: as if never read)
guard.leave_leftovers(sys.argv[1])
os.write(out, b"epoch 3 done\\nsaving")
os.write(err, "NCCL error: unhandled system error \\u2013 bye\\n".encode())
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_guardian_leaves_what_the_dead_rank_never_read_to_the_kernel(tmp_path: Path) -> None:
    left = left_file(str(tmp_path), 5)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(GUARDED), str(left)],
        env={**os.environ, "PYTHONPATH": PYTHON_PATH},
        timeout=60,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL
    assert Path(f"{left}.guard").exists()  # (the rank named its guardian as it set up)
    info = {5: RankInfo(5, "", None, "running", RankCoords(5, 5, 0, 5, 0, 0))}
    failure = RankFailure(5, time.time(), "", 1, kind="exit", signal=signal.SIGKILL)
    found = leftovers.leftovers(str(tmp_path), [failure], info)
    assert found == {
        5: [
            ("stdout", ["epoch 3 done", "saving"]),
            ("stderr", ["NCCL error: unhandled system error \u2013 bye"]),
        ]
    }
    assert list(tmp_path.iterdir()) == []  # taken: the file and the guardian's note removed
    # a rank whose guardian is gone without a word (its group killed at once) is not waited for
    Path(f"{left}.guard").write_text("4194305")  # (past any pid_max)
    t0 = time.monotonic()
    assert leftovers.leftovers(str(tmp_path), [failure], info) == {}
    assert time.monotonic() - t0 < leftovers.LEFT_WAIT
