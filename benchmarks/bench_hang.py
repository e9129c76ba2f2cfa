"""Hang diagnosis: how fast a hung cell says where its ranks are, and a rank that never starts
is named.

    python benchmarks/bench_hang.py [--ranks 2 4 8] [--out benchmarks/RESULTS.md]

Through one IPython shell and ``%%distributed`` on this machine (loopback only). Rank 0
finishes the cell; the others hang:

- ``sleep``: ``time.sleep(60)`` (the GIL is free: the ranks' I/O threads answer);
- ``gil``: ``ctypes.PyDLL(None).sleep(60)``, native code holding the GIL (faulthandler dumps);
- ``barrier``: ``dist.barrier()`` under ``--strategy ddp`` (gloo), entered by ranks 1..N-1.

Measured: ``--timeout`` firing → the diagnosis written under the cell, and the stop button
(SIGINT to the kernel) → the diagnosis (ranks that have not yielded 0.3 s after the interrupt
are diagnosed at once, while the 2 s grace that decides whether they are killed runs on; ranks
that yield need no diagnosis and keep their variables). Then a rank that never connects (its
interpreter start hangs) → named with its stage, and a wrong ``MASTER_ADDR`` → the start fails
naming the stage.
The tools a notebook user has otherwise (ipyparallel, accelerate's notebook_launcher,
torchrun) print nothing about where a rank hangs; before this change we waited out the
timeout and said "timed out", and a rank that never started was named after 120 s.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
SOURCE = str(HERE.parent / "python")
sys.path.insert(0, SOURCE)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))

from bench_core import machine, write_section  # noqa: E402

SECTION = "## Hang diagnosis (`benchmarks/bench_hang.py`)"
HANGS = {
    "sleep": ("", "import time\nif rank > 0:\n    time.sleep(60)"),
    "gil": ("", "import ctypes\nif rank > 0:\n    ctypes.PyDLL(None).sleep(60)"),
    "barrier": ("--strategy ddp", "if rank > 0:\n    dist.barrier()"),
}
DIAGNOSIS = "[jupyter-distributed] rank"


class Stamped:
    """stderr that remembers when each marked line was written."""

    def __init__(self, real: Any) -> None:
        self.real, self.lines = real, []  # type: ignore[var-annotated]

    def write(self, s: str) -> int:
        now = time.monotonic()
        self.lines.extend((now, line) for line in s.splitlines())
        return len(s)

    def flush(self) -> None:
        pass

    def first(self, text: str, after: float = 0.0) -> float | None:
        return next((t for t, line in self.lines if text in line and t >= after), None)


def run(shell: Any, line: str, cell: str) -> None:
    with contextlib.suppress(Exception, KeyboardInterrupt):  # the hang's error is expected
        shell.run_cell_magic("distributed", line, cell)


def hang_case(
    shell: Any, err: Stamped, n: int, kind: str, how: str, layout: str = ""
) -> float | None:
    """Seconds from the hang's timeout (or interrupt) to its diagnosis; ``layout``: the cell's
    layout flags in place of ``-n N``."""
    flags, cell = HANGS[kind]
    line = f"{layout or f'-n {n}'} --oversubscribe {flags}"
    run(shell, line, "x = 1")  # the cluster is up, so only the hang is timed
    err.lines.clear()
    start = time.monotonic()
    if how == "timeout":
        run(shell, f"{line} --timeout 3", cell)
        fired = start + 3.0
    else:
        fired = start + 3.0
        timer = threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        run(shell, line, cell)
        timer.cancel()
    seen = err.first(DIAGNOSIS, fired)
    return None if seen is None else seen - fired


def never_started(shell: Any, err: Stamped) -> tuple[float | None, float | None]:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "sitecustomize.py").write_text(
            "import os, time\nif os.environ.get('RANK') == '1':\n    time.sleep(600)\n"
        )
        path = os.pathsep.join([tmp, os.environ["PYTHONPATH"]])
        err.lines.clear()
        start = time.monotonic()
        done: list[float] = []
        timer = threading.Timer(20.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        run(shell, f"-n 2 --env PYTHONPATH={path}", "x = 1")
        timer.cancel()
        done.append(time.monotonic())
        named = err.first("still starting: rank 1 in process start")
    err.lines.clear()
    start2 = time.monotonic()
    run(shell, "-n 2 --strategy ddp --env MASTER_ADDR=jd-nowhere.invalid", "x = 1")
    failed = time.monotonic() - start2
    return (None if named is None else named - start), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    # the stop button is a SIGINT: Python ignores it when started in the background of a shell
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from IPython.core.interactiveshell import InteractiveShell

    os.environ.setdefault("JUPYTER_DISTRIBUTED_STORE", str(Path(tempfile.mkdtemp()) / "h.sqlite3"))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_distributed")
    began = time.monotonic()
    load0 = os.getloadavg()[0]
    err = Stamped(sys.stderr)
    real_err, sys.stderr = sys.stderr, err  # type: ignore[assignment]
    rows: dict[str, dict[int, str]] = {}
    try:
        for n in args.ranks:
            for kind in HANGS:
                for how in ("timeout", "interrupt"):
                    took = hang_case(shell, err, n, kind, how)
                    label = f"{how} → diagnosis shown, {kind}"
                    shown = "not shown" if took is None else f"{took * 1000:.0f} ms"
                    if how == "interrupt":
                        killed = err.first("did not stop") is not None
                        if took is None and not killed:
                            shown = "yielded, kept"  # ranks that yield need no diagnosis
                        elif took is not None:
                            shown += " (then killed)" if killed else " (then yielded, kept)"
                    rows.setdefault(label, {})[n] = shown
                    print(label, n, rows[label][n], file=real_err)
        named, failed = never_started(shell, err)
        shell.run_line_magic("distributed", "stop")
    finally:
        sys.stderr = real_err
    table = ["| metric | " + " | ".join(f"n={n}" for n in args.ranks) + " |",
             "|---|" + "---|" * len(args.ranks)]  # fmt: skip
    for label, by_n in rows.items():
        table.append(f"| {label} | " + " | ".join(by_n.get(n, "") for n in args.ranks) + " |")
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            SECTION,
            "",
            f"Run `python benchmarks/bench_hang.py` on {when}, {time.monotonic() - began:.0f} s.",
            "",
            f"Machine: {machine()}; load average (1 min) {load0:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end.",
            "",
            "Rank 0 finishes the cell, ranks 1..N-1 hang (see the script's docstring). Times are "
            "from the timeout firing (or SIGINT) to the diagnosis line under the cell. On an "
            "interrupt, ranks that have not yielded 0.3 s later are diagnosed at once; the 2 s "
            "grace in which they may still yield (and keep their variables) runs on, and a rank "
            "still busy after it is killed, named with its last stack.",
            "",
            *table,
            "",
            "| start-up | time |",
            "|---|---|",
            "| a rank whose interpreter never starts → named with its stage (`process start`) | "
            + ("not named" if named is None else f"{named:.1f} s")
            + " (before: 120 s, `start_timeout`) |",
            f"| wrong `MASTER_ADDR` (`--env`) → start fails naming `init_process_group` | "
            f"{failed:.1f} s (before: 120 s) |",
            "",
            "The wrong-`MASTER_ADDR` time counts from the cell's start: both ranks import torch "
            "first (several seconds on a loaded machine), then the rendezvous gets 5 s after the "
            "last rank entered it.",
            "",
        ]
    )
    print(text)
    write_section(args.out, text)


if __name__ == "__main__":
    main()
