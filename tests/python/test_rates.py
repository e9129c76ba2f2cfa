"""The samples/s rule and the straggler rule (``rates.py``) against the golden fixture that the
panel's ``rates.ts`` is checked against too (``tests/rates/rates.json``), and ``compare`` on a
real run whose rate the cell measures itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed import rates
from jupyter_distributed.settings import Distributed

from .core_helpers import shell  # noqa: F401

FIXTURE = json.loads((Path(__file__).parents[1] / "rates" / "rates.json").read_text())
REPORTS = {int(r): [(t, n) for t, n in rs] for r, rs in FIXTURE["reports"].items()}
EXPECTED = FIXTURE["expected"]
WINDOW = FIXTURE["window_seconds"]
DEGREE = FIXTURE["data_parallel_degree"]
THRESHOLD = FIXTURE["straggler_threshold"]


def _close(got: float | None, want: float | None) -> bool:
    return got == want if got is None or want is None else got == pytest.approx(want, rel=1e-9)


def _first_to_last(reports: list[tuple[float, float]]) -> float | None:
    rank = rates.RankRate()
    for t, n in reports:
        rank.add(t, n)
    return rank.rate


def _known(values: dict[str, float | None]) -> dict[int, float]:
    return {int(r): v for r, v in values.items() if v is not None}


def test_first_to_last_rates_totals_and_stragglers_match_the_fixture() -> None:
    got = {r: _first_to_last(rs) for r, rs in REPORTS.items()}
    want = EXPECTED["first_to_last"]
    assert all(_close(got[int(r)], v) for r, v in want.items()), got
    known = _known(want)
    assert rates.total(known, DEGREE) == pytest.approx(EXPECTED["total_first_to_last"])
    assert rates.stragglers(known, THRESHOLD) == EXPECTED["stragglers_first_to_last"]


def test_the_live_window_matches_the_fixture_per_rank_and_per_second() -> None:
    got = {r: rates.window_rate(rs, WINDOW) for r, rs in REPORTS.items()}
    assert all(_close(got[int(r)], v) for r, v in EXPECTED["live"].items()), got
    known = _known(EXPECTED["live"])
    assert rates.total(known, DEGREE) == pytest.approx(EXPECTED["total_live"])
    assert rates.stragglers(known, THRESHOLD) == EXPECTED["stragglers_live"]
    by_second: dict[int, dict[int, float]] = {}
    for rank, reports in REPORTS.items():
        line = rates.per_second(reports, WINDOW)
        want = EXPECTED["live_per_second"][str(rank)]
        assert [s for s, _ in line] == [s for s, _ in want]
        assert all(_close(v, w) for (_, v), (_, w) in zip(line, want, strict=True))
        for second, value in line:
            by_second.setdefault(second, {})[rank] = value
    want_totals = EXPECTED["total_live_per_second"]
    assert sorted(by_second) == [s for s, _ in want_totals]
    assert [rates.total(by_second[s], DEGREE) for s, _ in want_totals] == pytest.approx(
        [v for _, v in want_totals]
    )


def test_a_partial_first_second_does_not_count_as_a_whole_one() -> None:
    """The bug the rule replaces: 32 samples every 0.5 s from t = .75 is 64/s, not 32 for the
    first second and 64 after; one report alone has no rate."""
    reports = [(100.75 + 0.5 * k, 32.0) for k in range(9)]
    assert rates.window_rate(reports) == 64.0 and _first_to_last(reports) == 64.0
    assert rates.per_second(reports)[0] == (101, 64.0)
    assert rates.window_rate(reports[:1]) is None and _first_to_last(reports[:1]) is None


def test_the_straggler_rule_needs_two_ranks_and_uses_the_median() -> None:
    assert rates.stragglers({0: 10.0}, 0.8) == []
    assert rates.stragglers({0: 100.0, 1: 100.0, 2: 100.0, 3: 70.0}, 0.8) == [3]  # 30 % slower
    assert rates.stragglers({0: 100.0, 1: 100.0, 2: 100.0, 3: 70.0}, 0.5) == []
    assert rates.stragglers({0: 0.0, 1: 0.0}, 0.8) == []


def test_the_straggler_threshold_is_one_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Distributed().straggler_threshold == rates.STRAGGLER_THRESHOLD == 0.8
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STRAGGLER_THRESHOLD", "0.6")
    assert Distributed().straggler_threshold == 0.6


STEADY_CELL = """
import time
t0 = time.time()
for step in range(41):  # 32 samples every 50 ms, paced by the clock (no drift)
    time.sleep(max(0.0, t0 + 0.05 * step - time.time()))
    report(samples=32)
    if step == 0:
        first = time.time()
print(f"measured {32 * 40 / (time.time() - first):.3f} samples/s on rank {rank}")
"""


@pytest.mark.timeout(120)
def test_compare_shows_the_rate_the_cell_measured(
    shell: Any,  # noqa: F811
    capsys: Any,
) -> None:
    """A real 2-rank run: ``compare``, ``runs`` and the summary agree with the cell's own
    measurement within 2 %, and with the known 640 samples/s per rank."""
    assert shell.run_cell("%%distributed -n 2\n" + STEADY_CELL).success
    out = capsys.readouterr().out
    measured = [float(x) for x in re.findall(r"measured ([0-9.]+) samples/s", out)]
    assert len(measured) == 2
    own_total = sum(measured)  # two data-parallel replicas
    store = shell.user_ns["_jd_session"].store
    run = store.runs()[0]
    assert run.summary["throughput"] == pytest.approx(own_total, rel=0.02)
    assert run.summary["rank_rate"] == pytest.approx(640, rel=0.02)
    shell.run_line_magic("distributed", f"compare {run.id}")
    table = capsys.readouterr().out
    assert "samples/s: the run's total (one rank per data-parallel replica)" in table
    row = next(line.split() for line in table.splitlines() if line.startswith(run.id))
    total, per_rank = float(row[2]), float(row[3])
    assert total == pytest.approx(own_total, rel=0.02) and total == pytest.approx(1280, rel=0.02)
    assert per_rank == pytest.approx(640, rel=0.02)
    shell.run_line_magic("distributed", "runs")
    listed = capsys.readouterr().out
    assert f"{run.summary['throughput']:.1f} samples/s in total = " in listed
    assert "per rank × 2 data-parallel" in listed
