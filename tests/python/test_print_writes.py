"""A rank's print is one system call on the printing thread, not two (the text, then its
newline), where the rank's environment has ``PYTHONUNBUFFERED`` (issue 26: the cost we add to a
training step: the rank's stdout reader wakes once a line); a print without a newline still
shows while the cell runs."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from .core_helpers import shell  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


PRINTS = """
import threading, time
def _writes():
    with open(f"/proc/self/task/{threading.get_native_id()}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("syscw"))
_w0 = _writes()
for i in range(50):
    print(f"step {i} loss 0.5")
_w = _writes() - _w0
"""


def test_a_print_is_one_system_call_in_a_rank(shell: Any, capsys: Any) -> None:  # noqa: F811
    assert shell.run_cell(f"%%distributed -n 2 --pull _w\n{PRINTS}").error_in_exec is None
    for writes in shell.user_ns["_w"]:
        assert writes <= 55, writes  # (two a print before: the text, then its newline)
    out = capsys.readouterr().out
    assert "[ranks 0-1] step 49 loss 0.5" in out  # every line shown (both ranks alike)


def test_a_print_without_a_newline_shows_while_the_cell_runs(shell: Any, capsys: Any) -> None:  # noqa: F811
    cell = "import time\nprint('waiting', end='')\ntime.sleep(1.0)\nprint(' done')"
    assert shell.run_cell(f"%%distributed -n 1\n{cell}").error_in_exec is None
    out = capsys.readouterr().out
    # it left for the notebook before the rest of its line came, as a line of its own
    assert "waiting\n" in out, out
    assert " done" in out, out
