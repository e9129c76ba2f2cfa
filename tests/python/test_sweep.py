"""``--sweep``: one run per combination on its own local ranks, bounded parallelism, one sweep
in the history, per-combination pulls, and a failed combination that does not stop the others."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed.errors import SpecError
from jupyter_distributed.events import RunState
from jupyter_distributed.sweeps import Sweep, combination_key, parse_sweep

from .core_helpers import shell  # noqa: F401

pytestmark = pytest.mark.timeout(120)

CELL = """
import os, time
began = time.time()
time.sleep(0.6)
if lr == 0.1 and batch == 64:
    raise ValueError("diverged")
result = (lr, batch, rank, world_size, os.getpid())
span = (began, time.time())
"""


def test_parse_values_and_combinations() -> None:
    sweep = parse_sweep(["lr=1e-3,1e-2", "opt='adam',sgd", "flag=True"], 3)
    assert sweep is not None and sweep.parallel == 3
    assert sweep.axes == (("lr", (0.001, 0.01)), ("opt", ("adam", "sgd")), ("flag", (True,)))
    combos = sweep.combinations()
    assert len(combos) == 4
    assert combos[1] == (("lr", 0.001), ("opt", "sgd"), ("flag", True))
    assert combination_key(combos[1]) == (0.001, "sgd", True)
    assert combination_key((("lr", 0.1),)) == 0.1


@pytest.mark.parametrize(
    ("items", "parallel", "message"),
    [
        (["lr"], None, "must look like NAME=v1,v2"),
        (["lr=1,,2"], None, "empty value"),
        (["class=1,2"], None, "not a valid Python variable name"),
        (["lr=1,2", "lr=3"], None, "given twice"),
        (["lr=1,1"], None, "listed twice"),
        ([], 2, "--sweep-parallel needs --sweep"),
        (["lr=1,2"], 0, "positive integer"),
        ([f"a{i}=1,2,3,4" for i in range(6)], None, "at most 1000"),
    ],
)
def test_bad_sweeps_are_one_line_errors(items: list[str], parallel: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_sweep(items, parallel)


def test_sweep_runs_every_combination_bounded_and_reports_the_failed_one(
    shell: Any,  # noqa: F811
    capsys: Any,
) -> None:
    res = shell.run_cell(
        "%%distributed -n 1 --sweep lr=0.01,0.1 --sweep batch=32,64 --sweep-parallel 2 "
        "--pull result,span\n" + CELL
    )
    captured = capsys.readouterr()
    assert not res.success
    assert isinstance(res.error_in_exec, Exception)
    assert "1 of 4 combination(s) failed: lr=0.1 batch=64" in str(res.error_in_exec)
    results = shell.user_ns["result"]
    assert set(results) == {(0.01, 32), (0.01, 64), (0.1, 32)}
    for (lr, batch), per_rank in results.items():
        assert per_rank[0][:4] == (lr, batch, 0, 1)
    assert len({per_rank[0][4] for per_rank in results.values()}) == 3  # its own ranks each
    # bounded: never more than 2 combinations ran at the same moment, and they did overlap
    spans = [s[0] for s in shell.user_ns["span"].values()]
    at_once = max(sum(b <= t < e for b, e in spans) for t, _ in spans)
    assert at_once == 2
    assert "[lr=0.1 batch=64] [rank 0]" in captured.err and "ValueError: diverged" in captured.err
    assert "lr=0.01 batch=32" in captured.out and "completed" in captured.out
    store = shell.user_ns["_jd_session"].store
    runs = [r for r in store.runs() if r.sweep_id]
    assert len(runs) == 4 and len({r.sweep_id for r in runs}) == 1
    assert len(store.runs(sweep_id=runs[0].sweep_id)) == 4
    states = {tuple(r.summary["sweep"].values()): r.state for r in runs}
    assert states.pop((0.1, 64)) is RunState.FAILED
    assert set(states.values()) == {RunState.COMPLETED}
    assert not shell.user_ns["_jd_session"].live  # every combination's cluster is stopped


def test_sweep_dry_run_and_bad_input(shell: Any, capsys: Any) -> None:  # noqa: F811
    assert shell.run_cell("%%distributed -n 2 --sweep lr=1,2,3 --dry-run\npass").success
    out = capsys.readouterr().out
    assert "sweep:        3 combination(s)" in out and "plan of lr=1:" in out
    shell.user_ns["lr"] = 5
    with pytest.raises(UsageError, match="--push lr is also swept"):
        shell.run_cell_magic("distributed", "--sweep lr=1,2 --push lr", "pass")
    with pytest.raises(UsageError, match="--sweep-parallel 9"):
        shell.run_cell_magic(
            "distributed", "-n 4 --sweep lr=1,2,3,4,5,6,7,8,9 --sweep-parallel 9", "pass"
        )
    assert Sweep((("a", (1,)),)).size == 1


def test_stop_button_stops_a_sweep_and_leaves_no_rank(shell: Any) -> None:  # noqa: F811
    import os
    import signal
    import threading
    import time

    from jupyter_distributed.pids import pid_alive

    cell = "import os, time\nopen(f'{d}/{v}', 'w').write(str(os.getpid()))\ntime.sleep(60)"
    d = shell.user_ns["_jd_session"].store.path.parent / "pids"
    d.mkdir()
    threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    res = shell.run_cell(
        f"%%distributed -n 1 --sweep v=1,2,3,4 --sweep-parallel 2\n{cell.replace('{d}', str(d))}"
    )
    assert isinstance(res.error_in_exec, KeyboardInterrupt)
    assert time.monotonic() - t0 < 30
    pids = [int(p.read_text()) for p in d.iterdir()]
    assert 1 <= len(pids) <= 2  # the queued combinations never started
    assert not any(pid_alive(p) for p in pids)
    runs = [r for r in shell.user_ns["_jd_session"].store.runs() if r.sweep_id]
    assert runs and {r.state for r in runs} <= {RunState.INTERRUPTED}
    assert {r.message for r in runs} == {"interrupted: the sweep was stopped (the stop button)"}
