"""How soon an idle cluster acts on the panel's stop (issue 26's ≤ 1 s): the server's request
written into the history by another connection, to the cluster no longer alive.

    PYTHONPATH=python python benchmarks/stop_at_rest.py [--repeats 5] [--relays never]

Per repeat: a cluster of 2 local ranks behind a relay (``--relays never``: without, the
kernel as the relay) runs ``pass``, rests a while (a different phase of the kernel's look at
the controls, every 0.5 s at rest, each time), then the stop is requested through a second
``Store`` on the same file, as the server extension does. Prints each latency in ms with the
median and the worst.
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout

use_checkout(always=True)
from jupyter_distributed.display import CellView  # noqa: E402
from jupyter_distributed.history.store import Store  # noqa: E402
from jupyter_distributed.layout import Layout  # noqa: E402
from jupyter_distributed.session import Session  # noqa: E402
from jupyter_distributed.spec import Spec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--relays", choices=("always", "never"), default="always")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="jd-stop-rest-"))
    store = Store(folder / "history.sqlite")
    server = Store(folder / "history.sqlite")  # (the server extension's own connection)
    session = Session(store)
    took: list[float] = []
    try:
        for i in range(args.repeats):
            out = io.StringIO()
            spec = Spec(layout=Layout(nodes=1, procs_per_node=2), relays=args.relays)
            session.run_cell(spec, "pass", {}, view=CellView(out=out, err=out))
            (live,) = session.live.values()
            cluster = live.cluster
            time.sleep(0.3 + 0.11 * i)
            start = time.monotonic()
            server.request_control(cluster.id, "stop")
            while cluster.alive and time.monotonic() - start < 5.0:
                time.sleep(0.002)
            took.append(time.monotonic() - start)
            session.stop()
    finally:
        session.shutdown()
        server.close()
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
    shown = " ".join(f"{t * 1e3:.0f}" for t in took)
    print(
        f"the panel's stop acted on after (ms): {shown}; median "
        f"{statistics.median(took) * 1e3:.0f}, worst {max(took) * 1e3:.0f}"
    )


if __name__ == "__main__":
    main()
