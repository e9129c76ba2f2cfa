"""Stacks as data, without processes: a real faulthandler dump read back, the diagnosis
grouped root cause first, and the start-up stages named in time."""

from __future__ import annotations

import faulthandler
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from jupyter_distributed.cluster.hang import diagnose, last_seen
from jupyter_distributed.cluster.inbox import StacksReply
from jupyter_distributed.cluster.stackboard import StackBoard
from jupyter_distributed.cluster.startwatch import StartWatch, watch_start
from jupyter_distributed.protocol.stacks import Frame, RankStacks, ThreadStack, parse_faulthandler
from jupyter_distributed.worker.stacks import current_stacks

CELL = "<cell r1>"


def _rank(rank: int, *frames: Frame, source: str = "channel") -> RankStacks:
    return RankStacks(rank, (ThreadStack("MainThread", True, frames),), "ready", source)


TORCH = "/x/site-packages/torch/distributed/"
BARRIER = (
    Frame(CELL, 3, "<module>", "", "dist.barrier()"),
    Frame(TORCH + "c10d_logger.py", 83, "wrapper", "torch.distributed.c10d_logger"),
    Frame(TORCH + "distributed_c10d.py", 5356, "barrier", "torch.distributed.distributed_c10d"),
)


def test_a_faulthandler_dump_reads_back_as_threads_with_the_main_one_marked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dump.txt"
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, name="helper")
    helper.start()
    try:
        with path.open("w") as f:
            f.write(f"main 0x{threading.main_thread().ident:x}\n")
            f.flush()
            faulthandler.dump_traceback(file=f, all_threads=True)
    finally:
        stop.set()
        helper.join()
    threads = parse_faulthandler(path.read_text())
    assert len(threads) >= 2
    main = [t for t in threads if t.main]
    assert len(main) == 1
    assert main[0].frames[-1].func.startswith("test_a_faulthandler_dump")
    assert main[0].frames[-1].file == __file__  # outermost first: this test is innermost
    assert any(f.func == "wait" for t in threads if not t.main for f in t.frames)


def test_current_stacks_sees_the_main_thread_from_another_thread() -> None:
    out: list[list[dict[str, object]]] = []
    t = threading.Thread(target=lambda: out.append(current_stacks()))
    t.start()
    t.join()
    threads = [ThreadStack.from_json(x) for x in out[0]]
    assert threads[0].main  # the main one first; the asking thread is left out
    assert all(th.name != t.name for th in threads)
    assert threads[0].frames[-1].func.endswith("wait")  # innermost last: it waits for us
    assert any(f.file == __file__ for f in threads[0].frames)


def test_diagnosis_groups_ranks_and_counts_who_entered_the_collective() -> None:
    d = diagnose({1: _rank(1, *BARRIER)}, ranks=[0, 1], finished=[0])
    assert d.headline == (
        "rank 1 waits in torch.distributed.barrier (cell line 3: dist.barrier()); "
        "rank 0 finished the cell; the collective was entered by 1 of 2 ranks "
        "(rank 0 never entered it)"
    )
    assert 'File "<cell r1>", line 3, in <module>' in d.text and "dist.barrier()" in d.text
    many = {r: _rank(r, *BARRIER) for r in (1, 2, 3)}
    many[0] = _rank(0, Frame(CELL, 7, "<module>", "", "time.sleep(100)"))
    d = diagnose(many, ranks=[0, 1, 2, 3])
    assert d.headline.startswith("rank 0 is at cell line 7: time.sleep(100); ranks 1, 2, 3 wait in")
    assert "torch.distributed.barrier was entered by 3 of 4 ranks (rank 0 never entered it)" in (
        d.headline
    )
    assert d.text.count("--- ") == 2  # one stack per group, not per rank


def test_diagnosis_names_ranks_without_a_stack_and_gil_held_dumps() -> None:
    held = _rank(1, Frame(CELL, 2, "<module>", "", "lib.spin()"), source="faulthandler")
    d = diagnose({1: held, 2: RankStacks(2, (), "", "none", "no answer within 1s")}, [0, 1, 2])
    assert "rank 1 is at cell line 2: lib.spin()" in d.headline
    assert "rank 2: no stack (no answer within 1s)" in d.headline
    assert "dumped by faulthandler: the GIL was held" in d.text


def test_ranks_without_a_stack_for_the_same_reason_are_named_once() -> None:
    """At 10,000 ranks, thousands that did not answer made one clause each in the line."""
    unread = {r: RankStacks(r, (), "", "none", "no answer within 1s") for r in range(1, 5000)}
    unread[7000] = RankStacks(7000, (), "", "none", "no process yet")
    d = diagnose(unread, list(range(7001)), finished=[0])
    assert d.headline == (
        "rank 0 finished the cell; ranks 1-4999: no stack (no answer within 1s); "
        "rank 7000: no stack (no process yet)"
    )


def test_start_watch_names_a_slow_stage_once_and_a_rendezvous_that_hangs() -> None:
    w = StartWatch([0, 1], t0=0.0, notice_after=5.0, rendezvous_limit=5.0)
    assert w.slow(4.0) == []
    assert w.slow(5.5) == [0, 1] and w.slow(6.0) == []  # named once per stage
    assert w.stuck(6.0) == []  # slow (a long import), not stuck: no stacks yet
    w.reached(0, "init_process_group", 6.0, "rendezvous at h:1")
    assert w.stuck_rendezvous(20.0) == []  # rank 1 has not entered it: slow, not stuck
    w.reached(1, "setup", 6.5)
    w.reached(1, "init_process_group", 8.0)
    assert w.stuck_rendezvous(12.0) == []
    assert w.stuck_rendezvous(13.5) == [0, 1]
    assert "rank 0 in init_process_group for 8s, rendezvous at h:1" in w.describe([0], 14.0)
    w.reached(1, "ready", 14.0)
    assert w.stuck_rendezvous(30.0) == [0]


def test_start_watch_names_ranks_alike_once() -> None:
    """At hundreds of ranks the still-starting line names the ranks in one stage as a range."""
    w = StartWatch(range(300), t0=0.0)
    w.reached(7, "setup", 2.0)
    assert w.describe(range(300), 5.2) == (
        "ranks 0-6,8-299 in process start for 5s; rank 7 in setup for 3s"
    )


def test_start_watch_line_stays_short_at_ten_thousand_scattered_ranks() -> None:
    """10,000 ranks, every third one greeted: the line names the first and last runs and the
    count (it listed all 3,334 runs, ~30,000 characters, on a 16-core machine)."""
    w = StartWatch(range(10_000), t0=0.0)
    for r in range(0, 10_000, 3):
        w.reached(r, "ready", 1.0)
    line = w.describe([r for r in range(10_000) if r % 3], 22.0)
    assert (
        line == "ranks 1-2,4-5,7-8,10-11,13-14,16-17,…,9994-9995,9997-9998 (6,666 in all) "
        "in process start for 22s"
    )
    assert "(6,666 in all)" in w.progress() and len(w.progress()) < 200


def test_start_watch_names_a_slow_stage_then_shows_where_a_stuck_rank_is() -> None:
    w = StartWatch([0], t0=0.0, notice_after=5.0, stacks_after=30.0)
    notices: list[str] = []
    asked: list[list[int]] = []

    def stacks(ranks: Sequence[int]) -> dict[int, RankStacks]:
        asked.append(list(ranks))
        return {r: _rank(r, Frame(CELL, 1, "<module>", "", "import tensorflow")) for r in ranks}

    w.reached(0, "setup", 1.0, "import tensorflow")
    watch_start(w, 7.0, [0], stacks, notices.append)
    assert notices == ["still starting: rank 0 in setup for 6s, import tensorflow"]
    assert asked == []  # a slow import is named, its stacks are not dumped
    watch_start(w, 20.0, [0], stacks, notices.append)
    assert len(notices) == 1
    watch_start(w, 32.0, [0], stacks, notices.append)
    assert asked == [[0]] and "where they are" in notices[1] and "--- rank 0:" in notices[1]


def test_a_diagnosis_of_some_ranks_says_nothing_about_who_entered_the_collective() -> None:
    one = {1: _rank(1, *BARRIER)}
    text = diagnose(one, [0, 1], whole=False).text
    assert text.startswith("rank 1 waits in torch.distributed.barrier (cell line 3: dist.barri")
    assert "entered" not in text and "rank 0" not in text


def test_answers_that_keep_coming_are_all_waited_for() -> None:
    """Thousands of ranks answer a stack request over seconds (through relays, each answer
    verified): the kernel waits while answers keep coming, not a fixed time from the request,
    which at 10,000 ranks left 9 of 10 ranks without a stack."""
    board = StackBoard()
    board.open("q")

    def answer() -> None:
        for rank in range(40):  # one every 50 ms: 2 s in all, twice the quiet time allowed
            time.sleep(0.05)
            board.put(StacksReply("q", RankStacks(rank, (), "", "channel")))

    thread = threading.Thread(target=answer)
    thread.start()
    got = board.wait("q", list(range(41)), timeout=1.0)  # rank 40 never answers
    thread.join()
    assert sorted(got) == list(range(40))


def test_where_thousands_of_stuck_ranks_were_last_seen_is_one_short_line() -> None:
    """A notice of ranks that did not stop named each rank, and each one's place, in one line:
    at 10,000 ranks a list of 9,999 numbers and 9,999 clauses."""
    sleeping = _rank(0, Frame(CELL, 3, "<module>", "", "time.sleep(60)"))
    stacks = {r: RankStacks(r, sleeping.threads, "", "channel") for r in range(1, 10_000)}
    stacks[5000] = _rank(5000, *BARRIER)
    seen = last_seen([*range(1, 10_000), 10_000], stacks)  # (10,000: no stack)
    assert seen == (
        "ranks 1-4999,5001-9999 are at cell line 3: time.sleep(60); "
        "rank 5000 waits in torch.distributed.barrier (cell line 3: dist.barrier())"
    )
