"""Core benchmark: jupyter-distributed's local backend vs ipyparallel, side by side.

    python benchmarks/bench_core.py [--ranks 2 4] [--quick] [--no-ipp]

Both run in this process, through one IPython shell (``%%distributed`` and ``%%px``), on this
machine, on loopback only. Prints a table and writes benchmarks/RESULTS.md (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if importlib.util.find_spec("jupyter_distributed") is None:  # a checkout, not installed
    SOURCE = str(HERE.parent / "python")
    sys.path.insert(0, SOURCE)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))

from common import Results, fmt_rate, median, ms, pct, timed_loop  # noqa: E402
from drivers import IPP, JD  # noqa: E402

PUSH_BYTES = 100_000_000


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with Path("/proc/cpuinfo").open() as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:
        with Path("/proc/meminfo").open() as f:
            mem = int(f.readline().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        mem = float("nan")
    import ipyparallel
    import zmq

    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, pyzmq {zmq.__version__}, "
        f"ipyparallel {ipyparallel.__version__}"
    )


def bench(system: Any, n: int, res: Results, args: argparse.Namespace, tmp: Path) -> None:
    col = f"{'jd' if isinstance(system, JD) else 'ipp'} n={n}"
    log = lambda what: print(f"  [{col}] {what}", file=sys.__stderr__, flush=True)  # noqa: E731

    starts = [system.start() for _ in range(args.starts)]
    res.put("cluster start → first cell done (median)", col, ms(median(starts)))
    log(f"start {[round(s, 2) for s in starts]}")

    for _ in range(3):
        system.trivial()  # warm
    rtts = timed_loop(system.trivial, args.rtt_count, 30)
    res.put(
        "warm trivial cell, magic (median / p90)", col, f"{ms(median(rtts))} / {ms(pct(rtts, 90))}"
    )
    res.put("  runs measured", col, str(len(rtts)))
    if isinstance(system, IPP):
        views = timed_loop(system.trivial_view, args.rtt_count, 30)
        res.put(
            "warm trivial cell, DirectView.execute (median / p90)",
            col,
            f"{ms(median(views))} / {ms(pct(views, 90))}",
        )
    log(f"rtt median {median(rtts) * 1e3:.2f} ms")

    secs, stored, distinct, shown = system.flood(args.lines)
    want = n * args.lines
    res.put("output flood: lines/s (all lines recorded)", col, fmt_rate(stored / secs))
    res.put(
        "  lines received / printed (loss)",
        col,
        f"{distinct:,} / {want:,} ({want - distinct:,} lost)",
    )
    if isinstance(system, JD):
        res.put(
            "  lines shown under the cell (rest rate-limited, kept in history)", col, f"{shown:,}"
        )
    log(f"flood {stored}/{want} in {secs:.2f}s")

    out = system.paced(args.paced_secs, 100_000, 0.002)
    marked = out.marked()
    written = [w - p for _r, _i, p, w, _f in marked]
    flushed = [f - p for _r, _i, p, _w, f in marked]
    res.put(
        "print → kernel stdout latency p50 / p99 (paced 500 lines/s/rank)",
        col,
        f"{ms(median(written))} / {ms(pct(written, 99))}",
    )
    if isinstance(system, JD):
        res.put(
            "  … until flushed to the notebook p50 / p99",
            col,
            f"{ms(median(flushed))} / {ms(pct(flushed, 99))}",
        )
    log(f"latency p99 {pct(written, 99) * 1e3:.1f} ms over {len(marked)} lines")

    if isinstance(system, JD):
        cost, noop, recorded = system.report_cost(args.reports)
        res.put(
            "report() cost per call (slowest rank)",
            col,
            f"{cost * 1e6:.2f} µs (empty fn call {noop * 1e6:.2f} µs)",
        )
        res.put("  report() samples recorded / made", col, f"{recorded:,} / {n * args.reports:,}")
        log(f"report {cost * 1e6:.2f} us")
    else:
        res.put("report() cost per call (slowest rank)", col, "n/a (no equivalent)")

    import numpy as np

    system.push(np.ones(8))  # numpy imported on the ranks before timing
    array = np.ones(PUSH_BYTES // 8)
    pushes = [system.push(array) for _ in range(args.pushes)]
    res.put("push 100 MB NumPy array to all ranks (median)", col, ms(median(pushes)))
    log(f"push {[round(p, 3) for p in pushes]}")
    del array

    intr = [system.interrupt(20) for _ in range(args.interrupts)]
    res.put("interrupt → cell returned (median)", col, ms(median([i[0] for i in intr])))
    res.put(
        "interrupt → next cell done, ranks free (median)", col, ms(median([i[1] for i in intr]))
    )
    res.put("  variables kept after interrupt", col, "yes" if all(i[2] for i in intr) else "no")
    log(f"interrupt {intr}")

    if isinstance(system, JD):
        shown_after, returned_after = system.dead_rank(tmp, 20)
        res.put(
            "dead rank (os._exit(3)) → error shown",
            col,
            ms(shown_after) if shown_after is not None else "not shown",
        )
        res.put(
            "  → cell returned", col, ms(returned_after) if returned_after is not None else "n/a"
        )
        log(f"dead {shown_after} {returned_after}")
    else:
        noticed, how = system.dead_rank(tmp, 20, args.dead_wait)
        res.put(
            "dead rank (os._exit(3)) → error shown",
            col,
            f"{ms(noticed)} ({how})" if noticed is not None else how,
        )
        log(f"dead {noticed} {how}")
    system.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--no-ipp", action="store_true", help="skip ipyparallel")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    quick = args.quick
    args.starts = 1 if quick else 3
    args.rtt_count = 10 if quick else 50
    args.lines = 2_000 if quick else 20_000
    args.paced_secs = 0.5 if quick else 2.0
    args.reports = 20_000 if quick else 200_000
    args.pushes = 1 if quick else 3
    args.interrupts = 1 if quick else 3
    args.dead_wait = 15.0

    tmp = Path(tempfile.mkdtemp(prefix="jd-bench-"))
    os.environ["JUPYTER_DISTRIBUTED_STORE"] = str(tmp / "history.sqlite3")
    os.environ["IPYTHONDIR"] = str(tmp / "ipython")
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "jupyter_distributed")

    columns = [f"{s} n={n}" for n in args.ranks for s in (["jd"] if args.no_ipp else ["jd", "ipp"])]
    res = Results(columns)
    started = time.time()
    for n in args.ranks:
        systems: list[Any] = [JD(ip, n)] + ([] if args.no_ipp else [IPP(ip, n)])
        for system in systems:
            try:
                bench(system, n, res, args, tmp)
            finally:
                system.stop()

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table = res.markdown()
    print(table)
    args.out.write_text(
        "# Core benchmark results\n\n"
        f"Run `{' '.join(['python', 'benchmarks/bench_core.py', *sys.argv[1:]])}` on {when}, "
        f"{time.time() - started:.0f} s.\n\nMachine: {machine()}.\n\n"
        "jd = jupyter-distributed `--backend local` through `%%distributed`; ipp = ipyparallel "
        "`Cluster(n=N)` on 127.0.0.1 through `%%px` (and `DirectView` where named). Both are "
        "driven through the same IPython shell in the same process, one after the other.\n\n"
        f"{table}\n"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
