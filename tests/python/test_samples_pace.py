"""How often a rank's I/O thread sends its ``report()`` samples (issue 26: the cost we add to a
training step): at most every 0.2 s, and not while lines take them along. At 0.1 s, a loop that
prints every 0.2 s had half its samples sent alone, each a store transaction in the kernel. And
how often it looks in a cell that runs quietly: every 0.5 s, or when samples are due, not every
100 ms (each look is a wake-up that a training step on a busy core pays for)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_distributed.worker import __main__ as rank_main
from jupyter_distributed.worker import sampler


class Clock:
    def __init__(self) -> None:
        self.now = 100.0  # (steps of 0.125 s: exact in binary)

    def __call__(self) -> float:
        return self.now


def test_the_io_thread_sends_samples_at_most_every_fifth_of_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    sent: list[float] = []
    runtime = SimpleNamespace(in_cell=True, samples=[1], flushed=0.0, cell_started=clock.now)

    def flush_metrics() -> None:
        sent.append(clock.now)
        runtime.flushed = clock.now

    runtime.flush_metrics = flush_metrics
    channel: Any = SimpleNamespace(
        flush_later=lambda after: None, holding=lambda: False, rest=lambda due: None,
        send=lambda *a, **k: None,
    )  # fmt: skip
    ticker = rank_main._Ticker({})
    ticker.runtime, ticker.channel = runtime, channel  # type: ignore[assignment]
    ticker.last_beat = clock.now + 1e3  # (no heartbeat in this test)
    for _ in range(8):  # looks every 0.125 s for 1 s
        ticker()
        clock.now += 0.125
    assert sent == [100.0, 100.25, 100.5, 100.75]  # not at every look
    # a line that took the samples along 0.05 s ago: the look sends none
    sent.clear()
    clock.now += 0.3
    runtime.flushed = clock.now - 0.05
    ticker()
    assert sent == []


def test_a_resting_ranks_heartbeats_fall_on_the_clocks_whole_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """So a host's ranks beat together and their kernel wakes once for them all, not once
    for each rank every second (issue 26); a beat is never sooner than half a second on."""
    clock = Clock()
    wall = [5000.3]  # (the wall clock, 4,900.3 s ahead of the monotonic one here)
    monkeypatch.setattr(time, "monotonic", clock)
    monkeypatch.setattr(time, "time", lambda: wall[0])
    monkeypatch.setattr(rank_main, "memory_sample", lambda: {"rss_mb": 1.0})
    monkeypatch.setattr(sampler.GPU, "sample", lambda device: {})
    beats: list[float] = []
    waits: list[float | None] = []
    runtime = SimpleNamespace(in_cell=False, samples=[], flushed=0.0, run_id="", gpu_device=None)
    runtime.flush_metrics = lambda: None
    channel: Any = SimpleNamespace(
        flush_later=lambda after: None, holding=lambda: False, rest=waits.append,
        send=lambda message: beats.append(wall[0]),
    )  # fmt: skip
    ticker = rank_main._Ticker({})
    ticker.runtime, ticker.channel = runtime, channel  # type: ignore[assignment]
    monkeypatch.setattr(rank_main, "note_idle", lambda after, busy: None)
    for _ in range(3):  # (each tick when the rest asked: at the wait it gave)
        ticker()
        wait = waits[-1] or 0.0
        clock.now += wait
        wall[0] += wait
    assert beats[0] == 5000.3  # the first at once, then on whole seconds
    assert [round(b, 6) for b in beats[1:]] == [5001.0, 5002.0]


def test_a_quiet_running_cell_is_looked_at_every_half_second_or_when_samples_are_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    waits: list[float | None] = []
    runtime = SimpleNamespace(in_cell=True, samples=[], flushed=0.0, cell_started=clock.now)
    runtime.flush_metrics = lambda: None
    held = [False]
    channel: Any = SimpleNamespace(
        flush_later=lambda after: None, holding=lambda: held[0], rest=waits.append,
        send=lambda *a, **k: None,
    )  # fmt: skip
    capture = SimpleNamespace(partial_at=0.0, flush=lambda: None)
    ticker = rank_main._Ticker({})
    ticker.runtime, ticker.channel = runtime, channel  # type: ignore[assignment]
    ticker.capture = capture  # type: ignore[assignment]
    ticker.last_beat = clock.now + 1e3  # (no heartbeat in this test)

    def look(after: float) -> float | None:
        clock.now += after
        ticker()
        return waits[-1]

    assert look(0.5) is None  # the cell's first second: every 100 ms (its state, its output)
    assert look(0.625) == rank_main.QUIET_EVERY  # then quiet: every half second
    runtime.samples = [1]  # report() in a loop: when they are due
    assert look(0.125) == pytest.approx(0.075)  # (the last look at samples: 0.125 s ago)
    assert look(0.075) == pytest.approx(rank_main.SAMPLES_EVERY)  # sent now; the next due
    runtime.samples = []
    capture.partial_at = clock.now  # a print without a newline just showed: 100 ms again
    assert look(0.125) is None
    assert look(1.0) == rank_main.QUIET_EVERY
    held[0] = True  # a state held back: 100 ms
    assert look(0.125) is None
    held[0], runtime.in_cell = False, False  # the cell ended: 100 ms until the rank rests
    assert look(0.125) is None
