"""When ranks hang, the cell says where: through a real Jupyter kernel and real gloo ranks.

A barrier entered by one of two ranks, a rank in a native ``libc.sleep``, the stop button, a
rank asked for its stacks while the cell runs, and a rendezvous that never completes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from jupyter_distributed.history.store import Store

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(240)

BARRIER = (
    "%%distributed -n 2 --strategy ddp {flags}\nx = 41 + rank\nif rank == 1:\n"
    "    dist.barrier()\nrank"
)


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlockingKernelClient]:
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "history.sqlite3"))
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        run(kc, "%load_ext jupyter_distributed")
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


arrived: list[tuple[float, str]] = []  # when each output of the last run() arrived


def first_seen(text: str) -> float:
    return next(t for t, shown in arrived if text in shown)


def run(kc: BlockingKernelClient, code: str, timeout: float = 120) -> tuple[dict[str, Any], str]:
    """Execute ``code``; the reply's content and everything shown (streams, errors)."""
    shown: list[str] = []
    arrived.clear()

    def hook(msg: dict[str, Any]) -> None:
        c = msg["content"]
        arrived.append((time.monotonic(), str(c.get("text") or c.get("evalue") or "")))
        if msg["msg_type"] == "stream":
            shown.append(c["text"])
        elif msg["msg_type"] == "error":
            shown.append("\n".join(c["traceback"]) + f"\n{c['ename']}: {c['evalue']}\n")
        elif msg["msg_type"] in ("execute_result", "display_data"):
            shown.append(c["data"].get("text/plain", "") + "\n")

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    return reply["content"], "".join(shown)


def _stacks_events(tmp: Path) -> list[Any]:
    store = Store(tmp / "history.sqlite3")
    run_id = store.runs(limit=1)[0].id
    return [ev for _, ev in store.stacks(run_id)]


def test_timeout_names_the_rank_in_the_barrier_and_the_rank_that_finished(
    kernel: BlockingKernelClient, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    reply, shown = run(kernel, BARRIER.format(flags="--timeout 6"))
    took = time.monotonic() - t0
    assert reply["status"] == "error"
    assert "rank 1 waits in torch.distributed.barrier (cell line 3: dist.barrier())" in shown
    assert "rank 0 finished the cell without entering it" in shown
    # torch's flight recorder names the collective and its sequence number
    assert "barrier #1 (default_pg) was entered by 1 of 2 ranks (rank 1)" in shown
    assert 'File "<cell ' in shown and "line 3" in shown  # the stack itself, with the cell line
    assert "rank 1 did not stop" in shown  # killed, named with its last stack
    assert "last seen: rank 1 waits in torch.distributed.barrier" in shown
    assert took < 6 + 30  # start-up (torch import) + timeout + grace, never the barrier's own
    events = _stacks_events(tmp_path)
    assert [e.reason for e in events] == ["timeout", "killed"]
    assert events[0].diagnosis.startswith("barrier #1 (default_pg) was entered by 1 of 2")
    assert events[0].ranks[1]["threads"][0]["main"]
    reply, shown = run(kernel, "%%distributed -n 2\nrank * 10")
    assert reply["status"] == "ok" and "Out[rank 1]: 10" in shown


def test_a_rank_in_native_sleep_is_shown_and_the_cell_does_not_wait_it_out(
    kernel: BlockingKernelClient,
) -> None:
    code = (
        "%%distributed -n 2 --timeout 4\nimport ctypes\nlibc = ctypes.CDLL(None)\n"
        "if rank == 1:\n    libc.sleep(30)\nrank"
    )
    t0 = time.monotonic()
    reply, shown = run(kernel, code)
    assert time.monotonic() - t0 < 20
    assert reply["status"] == "error"
    assert "rank 1 is at cell line 4: libc.sleep(30)" in shown
    assert "rank 0 finished the cell" in shown
    assert run(kernel, "%%distributed -n 2\nrank")[0]["status"] == "ok"


def test_the_stop_button_shows_the_stacks_of_ranks_that_do_not_yield(
    kernel: BlockingKernelClient, tmp_path: Path
) -> None:
    run(kernel, "%%distributed -n 2 --strategy ddp\nrank")  # the cluster is up
    pressed: list[float] = []

    def press() -> None:
        pressed.append(time.monotonic())
        kernel_manager_interrupt(kernel)

    timer = threading.Timer(4.0, press)
    timer.start()
    try:
        reply, shown = run(kernel, BARRIER.format(flags=""))
    finally:
        timer.cancel()
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    where = "rank 1 waits in torch.distributed.barrier (cell line 3: dist.barrier())"
    assert where in shown
    assert "rank 0 finished the cell" in shown
    assert 'File "<cell ' in shown
    # diagnosed shortly after the interrupt, before the 2 s grace ends and rank 1 is killed
    assert first_seen(where) < first_seen("did not stop within 2s")
    assert first_seen(where) - pressed[0] < 2.0
    # the kill names it again only in its notice
    assert shown.count("barrier #1 (default_pg) was entered by 1 of 2 ranks") == 1
    assert "last seen: rank 1 waits in torch.distributed.barrier" in shown
    assert [e.reason for e in _stacks_events(tmp_path)] == ["interrupt", "killed"]
    assert run(kernel, "%%distributed -n 2\nrank")[0]["status"] == "ok"


def kernel_manager_interrupt(kc: BlockingKernelClient) -> None:
    kc.parent.interrupt_kernel()  # type: ignore[union-attr]


def test_distributed_stacks_shows_every_rank(kernel: BlockingKernelClient) -> None:
    run(kernel, "%%distributed -n 2\nimport threading\nx = 1")
    reply, shown = run(kernel, "%distributed stacks")
    assert reply["status"] == "ok", shown
    assert "rank 0" in shown and "rank 1" in shown and "serve" in shown
    reply, shown = run(kernel, "%distributed stacks --rank 1")
    assert "rank 1" in shown and "rank 0" not in shown


def test_a_rendezvous_that_never_completes_is_named_with_its_stage(
    kernel: BlockingKernelClient,
) -> None:
    t0 = time.monotonic()
    reply, shown = run(
        kernel, "%%distributed -n 2 --strategy ddp --env MASTER_ADDR=jd-nowhere.invalid\nrank"
    )
    assert reply["status"] == "error" and reply["ename"] == "LaunchError"
    assert "init_process_group" in shown and "jd-nowhere.invalid" in shown
    assert "MASTER_ADDR" in shown
    assert first_seen("init_process_group") - t0 < 15


def test_a_rank_holding_the_gil_in_native_code_is_dumped_by_faulthandler(
    kernel: BlockingKernelClient, tmp_path: Path
) -> None:
    # PyDLL keeps the GIL during the call: the rank's I/O thread cannot answer, a signal can
    code = "%%distributed -n 1 --timeout 3\nimport ctypes\nctypes.PyDLL(None).sleep(8)\nrank"
    t0 = time.monotonic()
    reply, shown = run(kernel, code)
    assert reply["status"] == "error"
    assert time.monotonic() - t0 < 15
    assert "rank 0 is at cell line 2: ctypes.PyDLL(None).sleep(8)" in shown
    (event, *_) = _stacks_events(tmp_path)
    assert event.ranks[0]["source"] == "faulthandler"


def test_ranks_stopped_with_a_rank_that_died_are_named_with_their_last_stacks(
    kernel: BlockingKernelClient, tmp_path: Path
) -> None:
    code = "%%distributed -n 2\nimport os, time\nif rank == 0:\n    os._exit(3)\ntime.sleep(60)"
    t0 = time.monotonic()
    reply, shown = run(kernel, code)
    assert time.monotonic() - t0 < 30
    assert reply["status"] == "error" and "rank 0" in reply["evalue"]
    assert "exited with code 3" in reply["evalue"]
    assert "rank 1 is at cell line 4: time.sleep(60)" in shown
    assert [e.reason for e in _stacks_events(tmp_path)] == ["killed"]


ALL_REDUCE = (
    "%%distributed -n 2 --strategy ddp --timeout 6\nimport time\nt = torch.ones(4)\n"
    "for _ in range(3):\n    dist.all_reduce(t)\nif rank == 0:\n    dist.all_reduce(t)\n"
    "else:\n    time.sleep(60)\nrank"
)


def test_the_flight_recorder_names_the_collective_and_its_sequence_numbers(
    kernel: BlockingKernelClient, tmp_path: Path
) -> None:
    reply, shown = run(kernel, ALL_REDUCE)
    assert reply["status"] == "error"
    assert "all_reduce #4 (default_pg) was entered by 1 of 2 ranks (rank 0)" in shown
    assert "rank 1's last collective is #3 — rank 1 is at cell line 8: time.sleep(60)" in shown
    # Per rank what it enqueued (what each completed may lag behind: torch marks it lazily).
    assert "collectives in default_pg (torch flight recorder): rank 0 enqueued #4" in shown, shown
    assert "rank 1 enqueued #3" in shown, shown
    (event, *_) = _stacks_events(tmp_path)
    assert event.diagnosis.startswith("all_reduce #4 (default_pg) was entered by 1 of 2")
    assert event.ranks[0]["flight"][0]["active"][0][:2] == [4, "all_reduce"]
