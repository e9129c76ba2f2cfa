"""An output flood through node relays: the kernel's CPU per line and lines/s, relays ``auto``
(the ranks talk to the kernel) against ``always`` (through a relay per node, which batches its
ranks' output), alternated.

    python benchmarks/bench_relay_flood.py [--lines 20000] [--rounds 2] [--tree CHECKOUT]

2 nodes × 2 real ranks each print ``--lines`` lines (flushed every 100; ``--same``: the
same lines on every rank, each flushed, which their relay sends up once). ``--tree`` runs another
checkout's code (e.g. an export of an older commit), for a before/after on the same machine.
Kernel CPU is this process's (every thread); relay CPU is the relay processes' (``always``; from
``/proc``), i.e. the lines/s one relay's core can pass. Wall times share the cores with the
ranks: shapes.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CODE = "import sys\nfor i in range({n}):\n    print(rank, i)\n    i % 100 or sys.stdout.flush()"
# --same: every rank prints the same lines, one flush each (a training loop's log line)
SAME = "import sys\nfor i in range({n}):\n    print('step', i, 'loss 0.25', flush=True)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", default=str(HERE.parent))
    parser.add_argument("--same", action="store_true", help="the ranks print the same lines")
    args = parser.parse_args()
    source = str(Path(args.tree, "python"))
    sys.path.insert(0, source)
    os.environ["PYTHONPATH"] = source  # (the ranks and relays run the same code)
    from jupyter_distributed.display import CellView
    from jupyter_distributed.history.store import Store
    from jupyter_distributed.layout import Layout
    from jupyter_distributed.session import Session
    from jupyter_distributed.spec import Spec

    store = Store(Path(tempfile.mkdtemp(prefix="jd-flood-")) / "history.sqlite3")
    session, lines = Session(store), 4 * args.lines
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {lines:,} lines per cell")
    print("| relays | kernel CPU µs/line | relays' CPU µs/line | lines/s (shares the cores) |")
    print("|---|---|---|---|")
    try:
        for relays in ("auto", "always") * args.rounds:
            spec = Spec(layout=Layout(nodes=2, procs_per_node=2), relays=relays)
            view = CellView(out=io.StringIO(), err=io.StringIO())
            session.run_cell(spec, "pass", {}, view=view)
            r0, c0, w0 = relay_cpu(), time.process_time(), time.perf_counter()
            code = SAME if args.same else CODE
            session.run_cell(spec, code.format(n=args.lines), {}, view=view)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            hops = f"{(relay_cpu() - r0) / lines * 1e6:.2f}" if relays == "always" else "—"
            print(f"| {relays} | {cpu / lines * 1e6:.2f} | {hops} | {lines / wall:,.0f} |")
            session.stop()
    finally:
        session.shutdown()
        store.close()


def relay_cpu() -> float:
    """User + system seconds of this process's relay children (``/proc``)."""
    total, me, tick = 0.0, os.getpid(), os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmd = stat.with_name("cmdline").read_bytes()
        except OSError:
            continue  # (it ended meanwhile)
        if int(fields[1]) == me and b"jupyter_distributed.cluster.relay" in cmd:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


if __name__ == "__main__":
    main()
