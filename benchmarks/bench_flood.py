"""bench_core's output flood (and its paced latency) alone, for a before/after of one change.

    python benchmarks/bench_flood.py [--ranks 4] [--repeats 5] [--lines 20000] [--flags=...]

The same cells as ``bench_core.py`` (``drivers.JD.flood`` and ``drivers.JD.paced``) through one
IPython shell, on the code of the checkout this file is in (even where another is installed):
run it from two checkouts in turn, several rounds, on the same machine. Prints one line: the
flood's lines/s (median of the repeats, all lines recorded), the kernel's CPU per line during
the flood cell (all its threads; less moved by the machine's other load than the rate), the
lines shown under the cell, and the paced lines' print → flushed latency p50 / p99. Writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import bench_shell, capture, pct, use_checkout  # noqa: E402

use_checkout(always=True)  # (this checkout's code, even where another is installed)
from drivers import JD  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lines", type=int, default=20_000, help="per rank (bench_core's)")
    parser.add_argument("--flags", default="", help="added to every %%%%distributed line")
    args = parser.parse_args()
    ip, _tmp = bench_shell("jd-flood-")
    jd = JD(ip, args.ranks)
    plain = jd.cell
    cpu: list[float] = []

    def cell(body: str, flags: str = "", expect_error: bool = False) -> Any:
        start = time.process_time()
        try:
            return plain(body, f"{flags} {args.flags}".strip(), expect_error)
        finally:
            cpu.append(time.process_time() - start)

    jd.cell = cell  # type: ignore[method-assign]
    rates, per_line, shown = [], [], []
    with capture(sys):
        ip.run_cell("raise KeyboardInterrupt")  # IPython's one-time traceback set-up
        jd.cell("pass")
        for _ in range(args.repeats):
            secs, stored, distinct, seen = jd.flood(args.lines)
            if distinct != args.ranks * args.lines:
                raise SystemExit(f"lines lost: {distinct} of {args.ranks * args.lines}")
            rates.append(stored / secs)
            per_line.append(cpu[-1] / stored)
            shown.append(seen)
        marked = jd.paced(1.0, 100_000, 0.002).marked()
        jd.session.stop()
    flushed = [f - p for _r, _i, p, _w, f in marked]
    print(
        f"{HERE.parent.name} n={args.ranks} {args.flags or '(default flags)'}: flood "
        f"{statistics.median(rates):,.0f} lines/s (each: {', '.join(f'{r:,.0f}' for r in rates)}), "
        f"kernel CPU {statistics.median(per_line) * 1e6:.2f} µs/line, "
        f"{statistics.median(shown):,.0f} shown; paced p50 / p99 "
        f"{pct(flushed, 50) * 1e3:.1f} / {pct(flushed, 99) * 1e3:.1f} ms ({len(marked)} lines)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
