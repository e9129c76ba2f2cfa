"""Progress while the user waits: a cluster's start-up shows one live line under the cell,
the stage each rank is at, gone once the cluster is ready (the rule, then through a real
kernel); a probe shows the pairs measured, k of N, gone once its table shows."""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from jupyter_client.manager import KernelManager

from jupyter_distributed.cluster import startup
from jupyter_distributed.cluster.inbox import Exited, Item, Ready, SetupFailed, StageReached
from jupyter_distributed.cluster.startwatch import StartWatch
from jupyter_distributed.errors import LaunchError, RankFailure

pytestmark = pytest.mark.timeout(180)


def test_the_line_names_each_stage_s_ranks_in_order_and_counts_the_ready() -> None:
    watch = StartWatch(range(4), 0.0)
    assert watch.progress() == "starting · process start: ranks 0-3 · ready: 0 of 4"
    watch.reached(1, "setup", 1.0)
    watch.reached(2, "setup", 1.0)
    watch.reached(3, "init_process_group", 2.0, "rendezvous at 127.0.0.1:29500")
    watch.reached(0, "ready", 3.0)
    assert watch.progress() == (
        "starting · imports: ranks 1-2 · init_process_group: rank 3 · ready: 1 of 4"
    )


class _Lines:
    """A run's view that keeps the start-up lines drawn."""

    def __init__(self) -> None:
        self.drawn: list[str] = []

    def starting(self, text: str) -> None:
        self.drawn.append(text)

    def notice(self, text: str) -> None:
        pass


def test_thousands_of_hellos_at_once_redraw_the_line_a_few_times_not_once_each() -> None:
    # the line names every rank's stage: drawn again for each of 10,000 ranks' messages, it
    # made a start quadratic (81 s of the kernel's main thread) and sent the notebook 20,000
    # redraws of a 50 kB line; it is drawn again at most every PROGRESS_EVERY seconds
    n = 3000
    inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
    for r in range(n):
        inbox.put(StageReached(r, "setup", 100 + r))
    for r in range(n):
        inbox.put(Ready(r))
    view = _Lines()
    t0 = time.monotonic()
    startup.wait_ready(inbox, cast(Any, dict.fromkeys(range(n))), cast(Any, object()),
               lambda ranks: {}, cast(Any, view), 60.0)  # fmt: skip
    took = time.monotonic() - t0
    assert view.drawn[0] == f"starting · process start: ranks 0-{n - 1} · ready: 0 of {n}"
    assert view.drawn[-1] == ""  # gone once every rank is ready
    assert len(view.drawn) <= 2 + took / startup.PROGRESS_EVERY + 1  # (not one per message: 6,000)


class _NoTail:
    def log_tail(self, rank: int | None) -> str:
        return ""


def _start_with(items: list[Any], later: list[Any], after: float) -> str:
    """The start's error where ``items`` are in the inbox and ``later`` come ``after`` s on."""
    inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
    for item in items:
        inbox.put(item)

    def put_later() -> None:
        for item in later:
            inbox.put(item)

    timer = threading.Timer(after, put_later)
    timer.start()
    try:
        with pytest.raises(LaunchError) as info:
            startup.wait_ready(inbox, cast(Any, dict.fromkeys(range(2))), cast(Any, _NoTail()),
                               lambda ranks: {}, cast(Any, _Lines()), 60.0)  # fmt: skip
    finally:
        timer.cancel()
    return str(info.value)


def test_a_rank_s_setup_error_read_after_its_exit_is_still_the_cause() -> None:
    # the rank sends its setup error, then exits with 2; its pidfd (the I/O thread's watch) can
    # put the exit in the inbox before the error's message is read: the error is the cause
    ended = Exited(RankFailure(0, 0.0, "vm", 14142, exit_code=2, kind="exit"))
    cause = SetupFailed(0, "--strategy multi-worker needs TensorFlow in the ranks' Python")
    text = _start_with([Ready(1), ended], [cause], after=0.1)
    assert text == f"rank 0 could not start: {cause.message}"
    # with no word from the rank, its end is the cause, a moment later
    t0 = time.monotonic()
    text = _start_with([ended], [], after=0.0)
    assert text == "rank 0 on vm (pid 14142) exited with code 2 before it was ready"
    assert startup.LAST_WORDS <= time.monotonic() - t0 < startup.LAST_WORDS + 1
    # nor does the start succeed when the rank that ended had said hello
    text = _start_with([Ready(0), ended, Ready(1)], [], after=0.0)
    assert text.endswith("before it was ready")


def _iopub_of(code: str, store: Path) -> list[dict[str, Any]]:
    """The IOPub messages of ``code`` run in a fresh kernel (after loading the extension)."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, "JUPYTER_DISTRIBUTED_STORE": str(store)})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute_interactive("%load_ext jupyter_distributed", timeout=60)
        got: list[dict[str, Any]] = []
        reply = kc.execute_interactive(code, timeout=120, output_hook=got.append)
        assert reply["content"]["status"] == "ok", got
        return got
    finally:
        kc.execute_interactive("%distributed shutdown", timeout=60)
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_cells_start_shows_each_ranks_stage_then_nothing(tmp_path: Path) -> None:
    msgs = _iopub_of("%%distributed -n 2\nprint('ran')", tmp_path / "h.sqlite3")
    start = [
        m
        for m in msgs
        if m["msg_type"] in ("display_data", "update_display_data")
        and m["content"].get("transient", {}).get("display_id", "").endswith("-start")
    ]
    assert start[0]["msg_type"] == "display_data"
    first = start[0]["content"]["data"]["text/plain"]
    assert first.startswith("[jupyter-distributed] starting · ") and "ready: 0 of 2" in first
    assert all(m["msg_type"] == "update_display_data" for m in start[1:])
    assert start[-1]["content"]["data"] == {}  # replaced by nothing once ready
    assert len({m["content"]["transient"]["display_id"] for m in start}) == 1  # one line
    ran = next(i for i, m in enumerate(msgs) if "ran" in m["content"].get("text", ""))
    assert msgs.index(start[-1]) < ran  # gone before the cell's own output


def _shown(msgs: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    """The display messages of the live line whose display id ends with ``suffix``."""
    return [
        m
        for m in msgs
        if m["msg_type"] in ("display_data", "update_display_data")
        and m["content"].get("transient", {}).get("display_id", "").endswith(suffix)
    ]


def test_a_probe_shows_pairs_measured_k_of_n_then_its_table(tmp_path: Path) -> None:
    msgs = _iopub_of("%distributed probe --quick -n 3", tmp_path / "h.sqlite3")
    progress = _shown(msgs, "-0-stderr-1")
    texts = [m["content"]["data"].get("text/plain", "") for m in progress]
    assert texts[0].startswith("[rank 0] probe: pairs measured ")
    assert texts[0].endswith(" of 3")
    assert progress[-1]["content"]["data"] == {}  # gone once the probe is over
    assert _shown(msgs, "-start")  # the cluster's start-up showed too
    printed = "".join(m["content"].get("text", "") for m in msgs)
    assert printed.startswith("probe ") and "pairs measured" not in printed


def test_a_sweep_shows_the_combination_running_then_nothing(tmp_path: Path) -> None:
    msgs = _iopub_of("%%distributed -n 1 --sweep lr=1,2 --sweep-parallel 1\npass", tmp_path / "h")
    line = [
        m
        for m in _shown(msgs, "-start")
        if m["content"]["transient"]["display_id"].startswith("jd-sweep-")
    ]
    texts = [m["content"]["data"].get("text/plain", "") for m in line]
    assert texts == [
        "[jupyter-distributed] sweep: lr=1 · 1 of 2",
        "[jupyter-distributed] sweep: lr=2 · 2 of 2",
        "",
    ]  # one line, redrawn in place, gone at the end
    assert [m["msg_type"] for m in line] == ["display_data", *["update_display_data"] * 2]
    table = next(i for i, m in enumerate(msgs) if "2 completed" in m["content"].get("text", ""))
    assert msgs.index(line[-1]) < table  # gone before the sweep's table
