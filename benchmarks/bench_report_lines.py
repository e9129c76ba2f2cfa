"""Print → notebook latency of a loop that also calls ``report()`` (issue 26).

``bench_core.py``'s paced lines (500 lines/s/rank) print and nothing else; a training loop
reports every step and prints now and then, and its samples travel with its lines. Here each
rank calls ``report(loss=..., step=...)`` ``--reports`` times between two lines, a line every
``--gap`` seconds, for ``--secs``; the latency of each line from its print to the kernel's
stdout (written) and to the notebook (flushed) is measured as ``bench_core.py`` measures it
(the line carries its print time). Prints p50 / p99 of both.

    PYTHONPATH=python python benchmarks/bench_report_lines.py [--ranks 2] [--secs 2]
        [--gap 0.02] [--reports 10] [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import bench_shell, capture, median, pct, use_checkout  # noqa: E402

CELL = (
    "import time\n"
    "stop = time.time() + {secs}\n"
    "i = 0\n"
    "while time.time() < stop:\n"
    "    for _ in range({reports}):\n"
    "        report(loss=0.5, step=i)\n"
    "    print(f'JDB {{rank}} {{i}} {{time.time():.6f}}')\n"
    "    i += 1\n"
    "    time.sleep({gap})"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--secs", type=float, default=2.0)
    parser.add_argument("--gap", type=float, default=0.02)
    parser.add_argument("--reports", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    use_checkout()
    ip, _ = bench_shell("jd-bench-report-lines-")
    flags = f"%%distributed -n {args.ranks}\n"
    if not ip.run_cell(flags + "pass").success:
        raise SystemExit("the cluster did not start")
    body = CELL.format(secs=args.secs, reports=args.reports, gap=args.gap)
    print(
        f"{args.ranks} ranks, {args.reports} report() calls and a line every {args.gap * 1e3:.0f}"
        f" ms per rank, {args.secs} s; load {os.getloadavg()[0]:.1f}"
    )
    print("| round | lines | written p50 / p99 ms | flushed p50 / p99 ms |\n|---|---|---|---|")
    try:
        for round_ in range(args.rounds):
            with capture(sys) as (out, _err):
                result = ip.run_cell(flags + body)
            if not result.success:
                raise SystemExit(f"the cell failed: {result.error_in_exec!r}")
            marked = out.marked()
            written = [w - p for _r, _i, p, w, _f in marked]
            flushed = [f - p for _r, _i, p, _w, f in marked]
            print(
                f"| {round_ + 1} | {len(marked)} "
                f"| {median(written) * 1e3:.1f} / {pct(written, 99) * 1e3:.1f} "
                f"| {median(flushed) * 1e3:.1f} / {pct(flushed, 99) * 1e3:.1f} |",
                flush=True,
            )
    finally:
        ip.magics_manager.registry["DistributedMagics"].session.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
