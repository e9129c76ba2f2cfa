"""What a training loop's cell costs the kernel while it runs (issue 26, ``bench_train.py``).

While a cell's ranks are awaited, the kernel's I/O thread ticks about 4 times a second, not 20
(a rank's death wakes it at once through its pidfd; held replies and the run's record ask for
their own ticks), and a rank that dies meanwhile is still named at once.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from jupyter_distributed.cluster.processwatch import ProcessWatch

from .core_helpers import shell  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds"),
]


def test_a_long_cells_kernel_ticks_a_few_times_a_second_and_still_sees_a_death(
    shell: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks: list[float] = []
    tick = ProcessWatch._tick

    def counted(self: Any) -> None:
        ticks.append(time.monotonic())
        tick(self)

    monkeypatch.setattr(ProcessWatch, "_tick", counted)
    assert shell.run_cell("%%distributed -n 2\nx = 1").error_in_exec is None
    ticks.clear()
    start = time.monotonic()
    result = shell.run_cell("%%distributed -n 2\nimport time\ntime.sleep(2.0)")
    assert result.error_in_exec is None, result.error_in_exec
    took = time.monotonic() - start
    # 4 a second, and a few more while the run starts and its record is written (at 50 ms
    # a tick, as before: 20 a second, ~40 in this cell)
    assert len(ticks) <= 4 * took + 6, f"{len(ticks)} ticks in a {took:.1f} s cell"
    # between cells every 50 ms again: a cell sent over the cell sockets wakes nobody, the
    # next tick starts its run (and writes its record by ~20 ms)
    (live,) = shell.user_ns["_jd_session"].live.values()
    assert live.cluster.router._loop._poll_ms == 50
    # a death mid-cell is named at once (its pidfd wakes the I/O thread), not at a tick
    start = time.monotonic()
    died = shell.run_cell(
        "%%distributed -n 2\nimport os, time\nif rank == 1:\n    os._exit(3)\ntime.sleep(30)"
    )
    assert died.error_in_exec is not None
    assert "rank 1" in str(died.error_in_exec)
    assert time.monotonic() - start < 10
