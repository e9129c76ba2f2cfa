"""``--verify``'s memory measure on a rank: the peak counts a free made on a thread torch's
profiler does not follow (gloo frees a collective's buffers on its own worker thread)."""

from __future__ import annotations

import threading

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
