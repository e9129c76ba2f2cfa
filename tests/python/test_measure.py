"""``--verify``'s memory measure on a rank: the peak counts a free made on a thread torch's
profiler does not follow (gloo frees a collective's buffers on its own worker thread)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from jupyter_distributed.worker.measure import every_thread_counted, peak_live_bytes  # noqa: E402

MIB = 2**20


def test_a_free_on_another_thread_lowers_the_count() -> None:
    from torch.profiler import ProfilerActivity, profile

    with (
        every_thread_counted() as found,
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        held = [torch.empty(MIB, dtype=torch.uint8)]
        dropper = threading.Thread(target=held.clear)  # the last reference goes on that thread
        dropper.start()
        dropper.join()
        again = torch.empty(MIB, dtype=torch.uint8)
        del again
    assert found
    # one MiB live at a time; summing the recorded events alone would say two
    assert MIB <= peak_live_bytes(prof) < 1.5 * MIB


def test_the_load_probe_runs_between_the_timed_steps() -> None:
    """``--verify``'s load probe (the plain block) is timed after each timed step, so a load
    change during a layout's steps shows in it (it was timed only after all of them)."""
    from jupyter_distributed.worker.measure import PROFILED_STEPS, measure

    order: list[str] = []

    def step(model: Any, opt: Any, batch: Any) -> None:
        order.append("step")

    got = measure({}, lambda: torch.nn.Linear(4, 4), 2, None, steps=3, step=step,
                  probe=lambda: order.append("probe"))  # fmt: skip
    assert order == ["step"] * PROFILED_STEPS + ["step", "probe"] * 3
    assert got["probe_seconds"] >= 0


def test_the_verify_cell_times_the_plain_block_between_and_after_the_steps() -> None:
    """The cell ``--verify`` runs on each rank (here in this process, no strategy) returns the
    plain block's time between the steps and after them."""
    from jupyter_distributed.advise.verify import PULLED, cell

    namespace: dict[str, Any] = {"tiny": lambda: torch.nn.Sequential(torch.nn.Linear(4, 4))}
    exec(cell("tiny", None, 2, None, 1, "adamw"), namespace)  # noqa: S102 (our own cell)
    got = namespace[PULLED]
    assert got["probe_seconds"] > 0 and got["plain_s"] > 0
    assert not {"_jd_plain", "_jd_measure", "_jd_block", "_jd_after"} & namespace.keys()
