"""The cluster's periodic look at its relays and aggregators (issue 26: 89 processes at 10,000
ranks): one poll of their pidfds, a process asked for its exit code only once it ended."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from jupyter_distributed.pids import EndWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds: Linux")


class Counted:
    """A process whose ``poll()`` (a ``waitpid``) calls are counted."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.pid, self.asked = proc, proc.pid, 0

    def poll(self) -> int | None:
        self.asked += 1
        return self.proc.poll()


def test_a_dead_process_is_named_once_with_its_code_and_live_ones_are_not_asked() -> None:
    procs = {i: Counted(subprocess.Popen(["sleep", "30"])) for i in range(5)}
    watch = EndWatch(procs)
    reported: set[int] = set()
    try:
        assert watch.ended(reported) == [] and watch.ended(reported) == []
        procs[3].proc.kill()
        deadline = time.monotonic() + 10
        ended: list[tuple[int, int]] = []
        while not ended and time.monotonic() < deadline:
            ended = watch.ended(reported)
            time.sleep(0.01)
        assert ended == [(3, -9)] and reported == {3}
        assert watch.ended(reported) == []  # (named once)
        assert [procs[i].asked for i in (0, 1, 2, 4)] == [0, 0, 0, 0]  # (before: one per look)
    finally:
        watch.close()
        for p in procs.values():
            p.proc.kill()
            p.proc.wait()
