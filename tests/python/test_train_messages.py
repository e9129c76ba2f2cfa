"""What a training loop's ranks cost the kernel while its cell runs (issue 26, ``bench_train.py``).

- A rank's ``report()`` samples leave with its next line, just ahead of it (one wake-up of the
  rank's I/O thread, one batch and one store transaction in the kernel, not a message of their
  own at the next look): a line printed after ``report()`` never reaches the kernel before
  the samples taken before it.
- While a cell's ranks are awaited, the kernel's I/O thread ticks about 4 times a second, not
  20 (a rank's death wakes it at once through its pidfd; held replies and the run's record ask
  for their own ticks), and a rank that dies meanwhile is still named at once.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from jupyter_distributed.cluster import intake as intake_module
from jupyter_distributed.cluster.processwatch import ProcessWatch
from jupyter_distributed.protocol.reports import Metrics, Output

from .core_helpers import shell  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds"),
]

SAMPLE_THEN_LINE = """\
import time
report(loss=1.0)
print("after the sample")
time.sleep(0.4)
"""


def test_samples_reported_before_a_line_reach_the_kernel_with_it(
    shell: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert shell.run_cell("%%distributed -n 2\nx = 1").error_in_exec is None  # (up, warm)
    taken: list[tuple[int, str]] = []
    take = intake_module.Intake._take

    def noted(self: Any, taken_: Any, rank: int, message: Any, buffers: Any) -> None:
        if isinstance(message, Metrics):
            taken.append((rank, "samples"))
        elif isinstance(message, Output) and any("after" in t for _, t in message.lines):
            taken.append((rank, "line"))
        take(self, taken_, rank, message, buffers)

    monkeypatch.setattr(intake_module.Intake, "_take", noted)
    result = shell.run_cell(f"%%distributed -n 2\n{SAMPLE_THEN_LINE}")
    assert result.error_in_exec is None, result.error_in_exec
    for rank in (0, 1):
        mine = [what for r, what in taken if r == rank]
        assert mine[:2] == ["samples", "line"], f"rank {rank}: {mine} (the samples came later)"


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
    # a death mid-cell is named at once (its pidfd wakes the I/O thread), not at a tick
    start = time.monotonic()
    died = shell.run_cell(
        "%%distributed -n 2\nimport os, time\nif rank == 1:\n    os._exit(3)\ntime.sleep(30)"
    )
    assert died.error_in_exec is not None
    assert "rank 1" in str(died.error_in_exec)
    assert time.monotonic() - start < 10
