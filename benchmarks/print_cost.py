"""What a print costs the thread that prints it in a rank (issue 26: a line's path).

In a warm ``%%distributed -n N`` cell each rank runs ``--lines`` iterations of ``--reports``
``report()`` calls, one print (timed: ``time.thread_time`` and ``time.perf_counter`` around
it) and a sleep of ``--gap`` seconds, as a training loop that reports every step and prints
now and then; prints the median and p90 of each rank's print, CPU and wall, in µs.

    PYTHONPATH=python python benchmarks/print_cost.py [--ranks 2] [--lines 200] [--reports 10]
        [--gap 0.02]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_shell, pct, use_checkout

CELL = """import time
_jd_cost = []
for i in range({lines}):
    for _ in range({reports}):
        report(loss=0.5, step=i)
    c0, w0 = time.thread_time(), time.perf_counter()
    print(f"step {{i}} loss 0.5")
    _jd_cost.append((time.thread_time() - c0, time.perf_counter() - w0))
    time.sleep({gap})
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--reports", type=int, default=10)
    parser.add_argument("--gap", type=float, default=0.02)
    args = parser.parse_args()
    use_checkout()
    ip, _ = bench_shell("jd-print-cost-")
    body = CELL.format(lines=args.lines, reports=args.reports, gap=args.gap)
    with redirect_stdout(io.StringIO()):
        ip.run_cell(f"%%distributed -n {args.ranks}\nx = 1")
        res = ip.run_cell(f"%%distributed -n {args.ranks} --pull _jd_cost\n{body}")
    if not res.success:
        raise SystemExit(str(res.error_in_exec))
    print(f"load {os.getloadavg()[0]:.1f}; µs per print: CPU median / p90, wall median / p90")
    for rank, costs in enumerate(ip.user_ns["_jd_cost"]):
        cpu = [1e6 * c for c, _ in costs[10:]]
        wall = [1e6 * w for _, w in costs[10:]]
        print(
            f"rank {rank}: CPU {statistics.median(cpu):.1f} / {pct(cpu, 90):.1f}, "
            f"wall {statistics.median(wall):.1f} / {pct(wall, 90):.1f}"
        )
    ip.magics_manager.registry["DistributedMagics"].session.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
