"""A 20,000-line stderr flood on 2 ranks, through a real shell and real processes: the rate
limit cuts most of it, and each rank's last lines (``flood-done``) are shown every time."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.timeout(240)

CELL = (
    "import sys\n"
    "for i in range(20_000):\n"
    "    sys.stderr.write(f'noise {i} ' + 'x' * 30 + '\\n')\n"
    "sys.stderr.write(f'flood-done {rank}\\n')\n"
    "sys.stderr.flush()"
)


def test_each_ranks_last_lines_show_after_a_flood_every_time(shell: Any, capsys: Any) -> None:
    for attempt in range(3):
        assert shell.run_cell(f"%%distributed -n 2\n{CELL}").success
        err = capsys.readouterr().err
        assert "were not shown to keep the notebook responsive" in err, attempt
        assert "the history has all 40002 lines" in err, attempt
        for rank in (0, 1):
            assert f"[rank {rank}] flood-done {rank}" in err, (attempt, rank)
