"""Our threads yield to a training loop's (issue 26: the cost we add to a training step).

With ``JD_THREAD_NICE=N``, a rank's capture readers, its I/O thread and its ZeroMQ threads run
at nice N, above its main thread, and so does the kernel's I/O thread while a cell runs: woken
on a core a rank trains on, they wait for a gap (the rank in its all_reduce) instead of taking
the core. Unset (the default, no gain measured yet) or 0, every thread is left as it is. And a
print is one system call on the printing thread, not two (the text, then its newline), where the
rank's environment has ``PYTHONUNBUFFERED``; a print without a newline still shows while the
cell runs.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed import threadnice

from .core_helpers import shell  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice, /proc"),
]

NICE_OF = """
import os as _o, threading as _t
def _nice(tid):
    with open(f"/proc/self/task/{tid}/stat") as f:
        return int(f.read().rpartition(")")[2].split()[16])
_n = {t.name: _nice(t.native_id) for t in _t.enumerate() if t.name.startswith("jd-")}
for _tid in _o.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{_tid}/comm") as _f:
        if _f.read().startswith("ZMQbg/"):
            _n["zmq " + _tid] = _nice(_tid)
_n["main"] = _nice(_t.main_thread().native_id)
"""


def kernel_io_nice(shell: Any) -> int:  # noqa: F811
    (live,) = shell.user_ns["_jd_session"].live.values()
    tid = live.cluster.router._loop._thread.native_id
    stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[16])


def test_our_threads_yield_to_a_ranks_main_thread_as_a_cell_runs(
    shell: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(threadnice.NICE_ENV, str(threadnice.TRIED))
    base = threadnice.get()  # (the ranks' and the kernel's, unless the tests run niced)
    ours = max(base, threadnice.TRIED)
    assert shell.run_cell(f"%%distributed -n 2 --pull _n\n{NICE_OF}").error_in_exec is None
    for rank, nice in enumerate(shell.user_ns["_n"]):
        assert nice.pop("main") == base, rank  # the user's thread as it was
        assert {"jd-channel", "jd-capture-stdout", "jd-capture-stderr"} <= set(nice), nice
        assert any(name.startswith("zmq ") for name in nice), nice
        assert set(nice.values()) == {ours}, (rank, nice)
    # the kernel's I/O thread while a cell runs, and after it where the system lets it back
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.add(kernel_io_nice(shell))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = shell.run_cell("%%distributed -n 2\nimport time\ntime.sleep(1.0)")
    finally:
        done.set()
        watcher.join()
    assert result.error_in_exec is None
    assert ours in seen, seen
    after = kernel_io_nice(shell)
    assert after == (base if threadnice.may_restore(base) else ours)
    # the main thread of the kernel is never lowered
    assert threadnice.get(threading.main_thread().native_id or 0) == base


@pytest.mark.parametrize("value", ["0", None])
def test_a_nice_of_zero_or_none_leaves_every_thread_as_it_is(
    shell: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    value: str | None,
) -> None:
    if value is None:
        monkeypatch.delenv(threadnice.NICE_ENV, raising=False)
    else:
        monkeypatch.setenv(threadnice.NICE_ENV, value)
    base = threadnice.get()
    assert shell.run_cell(f"%%distributed -n 2 --pull _n\n{NICE_OF}").error_in_exec is None
    for nice in shell.user_ns["_n"]:
        assert set(nice.values()) == {base}, nice
    assert shell.run_cell("%%distributed -n 2\nx = 1").error_in_exec is None
    assert kernel_io_nice(shell) == base


def test_lower_sets_only_the_calling_thread() -> None:
    got: list[int] = []
    base = threadnice.get()

    def lowered() -> None:
        threadnice.lower(nice=max(base, 7))
        got.append(threadnice.get())

    thread = threading.Thread(target=lowered)
    thread.start()
    thread.join()
    assert got == [max(base, 7)]
    assert threadnice.get() == base  # (this thread's own, untouched)


PRINTS = """
import threading, time
def _writes():
    with open(f"/proc/self/task/{threading.get_native_id()}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("syscw"))
_w0 = _writes()
for i in range(50):
    print(f"step {i} loss 0.5")
_w = _writes() - _w0
"""


def test_a_print_is_one_system_call_in_a_rank(shell: Any, capsys: Any) -> None:  # noqa: F811
    assert shell.run_cell(f"%%distributed -n 2 --pull _w\n{PRINTS}").error_in_exec is None
    for writes in shell.user_ns["_w"]:
        assert writes <= 55, writes  # (two a print before: the text, then its newline)
    out = capsys.readouterr().out
    assert "[ranks 0-1] step 49 loss 0.5" in out  # every line shown (both ranks alike)


def test_a_print_without_a_newline_shows_while_the_cell_runs(shell: Any, capsys: Any) -> None:  # noqa: F811
    cell = "import time\nprint('waiting', end='')\ntime.sleep(1.0)\nprint(' done')"
    assert shell.run_cell(f"%%distributed -n 1\n{cell}").error_in_exec is None
    out = capsys.readouterr().out
    # it left for the notebook before the rest of its line came, as a line of its own
    assert "waiting\n" in out, out
    assert " done" in out, out
