"""Rich output from ranks: forwarding large displays, and the cost of a tqdm bar on a rank.

    python benchmarks/bench_rich.py [--ranks 8] [--repeats 5]

1. Every rank displays one 1 MB PNG (``IPython.display.Image``). "Time to show" is from the
   rank's ``display()`` call (stamped in the bundle's metadata) to the kernel publishing it under
   the cell (the shell's display publisher is replaced by one that stamps the time); both
   clocks are this machine's. "Bytes recorded" is what the history keeps for those displays.
2. A loop of steps of about 1 ms of work (1 kHz) on 2 ranks with a tqdm bar, against the same
   loop with ``tqdm(disable=True)``. The rank's CPU time (every thread of the process: tqdm's
   redraws plus our line capture and forwarding) is the cost measure, as wall time on a shared
   machine moves with its load; wall time is printed too. Runs alternate; medians reported.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PNG_CELL = """
import base64, os, struct, time, zlib
from IPython.display import Image, display
raw = os.urandom(1_000_000)
png = (b"\\x89PNG\\r\\n\\x1a\\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 500, 500)
       + b"\\x08\\x02\\x00\\x00\\x00" + b"\\x00" * 4 + raw)
display(Image(data=png, format="png"), metadata={"t": time.time()})
"""
CALIBRATE_CELL = """
import time
def work(k):
    x = 0
    for i in range(k):
        x += i * i
    return x
best = min(
    (lambda c0: (work(200_000), time.process_time() - c0)[1])(time.process_time())
    for _ in range(5)
)
per_step = max(1, int(200_000 * 0.001 / best))  # 1 ms of CPU work, measured once
"""
TQDM_CELL = """
import time
from tqdm import tqdm
def spin(n, disable):
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in tqdm(range(n), disable=disable, mininterval=0.1):
        work(per_step)
    return time.perf_counter() - w0, time.process_time() - c0
elapsed = spin({steps}, {disable})
"""


def _shell() -> tuple[Any, list[tuple[float, dict[str, Any]]]]:
    from IPython.core.displaypub import DisplayPublisher
    from IPython.testing.globalipapp import start_ipython

    shown: list[tuple[float, dict[str, Any]]] = []

    class Stamp(DisplayPublisher):
        def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
            shown.append((time.time(), metadata or {}))

    ip = start_ipython()
    ip.display_pub = Stamp(shell=ip)
    ip.run_line_magic("load_ext", "jupyter_distributed")
    return ip, shown


def bench_png(ip: Any, shown: list[Any], ranks: int, repeats: int) -> dict[str, str]:
    session = ip.magics_manager.registry["DistributedMagics"].session
    ip.run_cell(f"%%distributed -n {ranks}\npass")  # a warm cluster
    delays, cells, recorded = [], [], []
    for _ in range(repeats):
        shown.clear()
        t0 = time.perf_counter()
        result = ip.run_cell(f"%%distributed -n {ranks}\n{PNG_CELL}")
        cells.append(time.perf_counter() - t0)
        assert result.success, result.error_in_exec
        ours = [(t, md) for t, md in shown if "t" in md]
        assert len(ours) == ranks, f"{len(ours)} of {ranks} displays shown"
        delays += [t - md["t"] for t, md in ours]
        run = session.store.runs(limit=1)[0].id
        with sqlite3.connect(session.store.path) as db:
            (n,) = db.execute(
                "SELECT SUM(LENGTH(data)) FROM events WHERE run=(SELECT key FROM run_keys"
                " WHERE id=?) AND kind=(SELECT code FROM codes WHERE name='display')",
                (run,),
            ).fetchone()
        recorded.append(n)
    delays.sort()
    return {
        f"1 MB PNG from each of {ranks} ranks: time to show, p50 / max": (
            f"{statistics.median(delays) * 1e3:.1f} ms / {delays[-1] * 1e3:.1f} ms"
        ),
        "  whole cell (display on every rank), median": f"{statistics.median(cells) * 1e3:.1f} ms",
        "  bytes recorded per run (all ranks)": f"{statistics.median(recorded) / 1e6:.2f} MB",
    }


def bench_tqdm(ip: Any, repeats: int, steps: int) -> dict[str, str]:
    cpu: dict[bool, list[float]] = {True: [], False: []}
    wall: dict[bool, list[float]] = {True: [], False: []}
    ratios = []
    assert ip.run_cell(f"%%distributed -n 2\n{CALIBRATE_CELL}").success
    for i in range(repeats):
        for disable in (False, True) if i % 2 == 0 else (True, False):
            cell = TQDM_CELL.format(steps=steps, disable=disable)
            result = ip.run_cell(f"%%distributed -n 2 --pull elapsed\n{cell}")
            assert result.success, result.error_in_exec
            wall[disable].append(sum(w for w, _ in ip.user_ns["elapsed"]) / 2)
            cpu[disable].append(sum(c for _, c in ip.user_ns["elapsed"]) / 2)
        ratios.append(cpu[False][-1] / cpu[True][-1])
    med = statistics.median
    return {
        f"{steps} steps of ~1 ms (1 kHz) on 2 ranks, tqdm on / off: CPU time per rank": (
            f"{med(cpu[False]):.3f} s / {med(cpu[True]):.3f} s"
        ),
        "  wall time per rank (moves with the machine's load)": (
            f"{med(wall[False]):.3f} s / {med(wall[True]):.3f} s"
        ),
        "  tqdm's cost in CPU time (target ≤ 5 %)": f"{(med(ratios) - 1) * 100:+.1f} %",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["JUPYTER_DISTRIBUTED_STORE"] = str(Path(tmp) / "history.sqlite3")
        ip, shown = _shell()
        started = time.time()
        rows = bench_png(ip, shown, args.ranks, args.repeats)
        rows |= bench_tqdm(ip, args.repeats, args.steps)
        ip.run_line_magic("distributed", "stop")
    print(
        f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
        f"{time.time() - started:.0f} s; {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| metric | value |\n|---|---|")
    for metric, value in rows.items():
        print(f"| {metric} | {value} |")


if __name__ == "__main__":
    main()
