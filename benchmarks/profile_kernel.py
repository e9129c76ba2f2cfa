"""Profile mode: where the kernel's time goes, per thread, with cProfile.

    python benchmarks/profile_kernel.py [--ranks 2] [--cells 300] [--lines 20000] [--top 15]

Runs warm trivial cells, then an output flood, through ``%%distributed`` in one IPython shell,
with cProfile on the main thread (the magic, the recorder, the supervisor) and on the
cluster's I/O thread (receive, verify, decode, record). Prints the top functions of each by
own time; RESULTS.md keeps a before/after of them. The ranks are not profiled (see py-spy:
``py-spy record --subprocesses -- python benchmarks/profile_kernel.py``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import capture, use_checkout  # noqa: E402

use_checkout()
from drivers import PRINT_CELL  # noqa: E402


def top(prof: cProfile.Profile, count: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(count)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(line.replace(str(HERE.parent) + "/", "") for line in lines[start:] if line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument(
        "--no-profile", action="store_true", help="only the kernel's CPU time (no profiler)"
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jd-prof-"))
    os.environ["JUPYTER_DISTRIBUTED_STORE"] = str(tmp / "history.sqlite3")
    os.environ["IPYTHONDIR"] = str(tmp / "ipython")
    from IPython.testing.globalipapp import start_ipython

    from jupyter_distributed import ioloop as loop

    # The I/O thread's callbacks (receive/verify/decode/record, and the tick) run under the
    # profiler of the current scenario; time blocked in poll() is not counted.
    current: list[cProfile.Profile] = [cProfile.Profile()]
    init = loop.IoLoop.__init__

    def profiled_init(self: loop.IoLoop, *a: object, **kw: object) -> None:
        init(self, *a, **kw)  # type: ignore[arg-type]
        if not self._thread.name.startswith("jd-c-"):
            return
        on_batch, tick, drain, serve = self._on_batch, self._tick, self._drain, self._serve_ready
        if args.no_profile:
            return
        self._on_batch = lambda batch: current[0].runcall(on_batch, batch)
        self._tick = lambda: current[0].runcall(tick)
        self._drain = lambda: current[0].runcall(drain)  # type: ignore[method-assign]
        # the ranks' cell sockets (cells' ends), read beside the ROUTER
        self._serve_ready = lambda ready: current[0].runcall(serve, ready)  # type: ignore[method-assign]

    loop.IoLoop.__init__ = profiled_init  # type: ignore[method-assign]
    ip = start_ipython()
    ip.run_line_magic("load_ext", "jupyter_distributed")
    cell = f"%%distributed -n {args.ranks}\n"
    report = []
    with capture(sys):
        for _ in range(5):
            ip.run_cell(cell + "pass")
        for what, body, count in (
            ("warm trivial cell", "pass", args.cells),
            (f"output flood ({args.lines:,} lines per rank)", PRINT_CELL, 1),
        ):
            main_prof = cProfile.Profile()
            io_prof = cProfile.Profile()
            current[0] = io_prof
            times = []
            cpu0 = time.process_time()
            for _ in range(count):
                code = cell + body.format(count=args.lines)
                t0 = time.perf_counter()
                if not args.no_profile:
                    main_prof.enable()
                result = ip.run_cell(code)
                main_prof.disable()
                ok = result.success
                times.append(time.perf_counter() - t0)
                if not ok:
                    raise SystemExit(f"the {what} cell failed: {result.error_in_exec!r}")
            cpu = time.process_time() - cpu0  # the kernel process, all its threads
            time.sleep(0.3)  # the I/O thread has recorded the last lines
            per = f"{cpu / count * 1e3:.2f} ms per cell" if count > 1 else ""
            if count == 1:
                per = f"{cpu / (args.lines * args.ranks) * 1e6:.1f} µs per line"
            report.append(
                f"### {what}: {len(times)} cell(s), "
                f"median {statistics.median(times) * 1e3:.2f} ms, "
                f"kernel CPU {cpu:.2f} s ({per}), load average {os.getloadavg()[0]:.1f}\n"
            )
            if args.no_profile:
                continue
            report.append(f"main thread:\n\n```\n{top(main_prof, args.top)}\n```\n")
            current[0] = cProfile.Profile()
            if not args.no_profile:
                report.append(f"I/O thread:\n\n```\n{top(io_prof, args.top)}\n```\n")
    ip.magics_manager.registry["DistributedMagics"].session.stop()
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
