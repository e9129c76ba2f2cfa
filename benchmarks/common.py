"""Shared pieces of the core benchmark: statistics, an stdout that stamps arrivals, the table."""

from __future__ import annotations

import atexit
import importlib.util
import io
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def use_checkout(always: bool = False) -> None:
    """Without an installed package (or ``always``), run from this checkout: its ``python/``
    first on the path of this process and, through ``PYTHONPATH``, of the ranks it starts."""
    if not always and importlib.util.find_spec("jupyter_distributed") is not None:
        return
    source = str(Path(__file__).resolve().parent.parent / "python")
    sys.path.insert(0, source)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))


def bench_shell(prefix: str) -> tuple[Any, Path]:
    """An IPython shell with ``%%distributed`` loaded, on a private history and IPython
    directory (under the returned temporary folder). As in a kernel, SIGINT raises
    KeyboardInterrupt (a background job of a shell starts with SIGINT ignored, and Python then
    keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, tmp, True)  # (the history and IPython's folder: a run's own)
    os.environ["JUPYTER_DISTRIBUTED_STORE"] = str(tmp / "history.sqlite3")
    os.environ["IPYTHONDIR"] = str(tmp / "ipython")
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "jupyter_distributed")
    return ip, tmp


# Lines the ranks print carry this marker: "JDB <rank> <i> <time.time()>"
MARK = re.compile(r"JDB (\d+) (\d+) (\d+\.\d+)")


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def pct(xs: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of xs."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s)) - 1))]


def timed_loop(fn: Callable[[], Any], count: int, budget_s: float) -> list[float]:
    """Call fn up to ``count`` times within ``budget_s`` seconds; the duration of each call."""
    out: list[float] = []
    stop = time.monotonic() + budget_s
    while len(out) < count and time.monotonic() < stop:
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


class Arrivals(io.TextIOBase):
    """A text stream that records when each line was written and when it was flushed (the moment
    a kernel's stdout would send it to the notebook)."""

    def __init__(self) -> None:
        super().__init__()
        self._partial = ""
        self._pending: list[tuple[str, float]] = []
        self.lines: list[tuple[str, float, float]] = []  # text, written, flushed

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        now = time.time()
        text = self._partial + s
        *complete, self._partial = text.split("\n")
        self._pending.extend((line, now) for line in complete)
        return len(s)

    def flush(self) -> None:
        now = time.time()
        self.lines.extend((line, t, now) for line, t in self._pending)
        self._pending.clear()

    def close_out(self) -> None:
        if self._partial:
            self._pending.append((self._partial, time.time()))
            self._partial = ""
        self.flush()

    def marked(self) -> list[tuple[int, int, float, float, float]]:
        """(rank, i, printed at, written at, flushed at) of every marked line, once each."""
        seen: set[tuple[int, int]] = set()
        out = []
        for line, written, flushed in self.lines:
            for m in MARK.finditer(line):
                key = (int(m.group(1)), int(m.group(2)))
                if key not in seen:
                    seen.add(key)
                    out.append((key[0], key[1], float(m.group(3)), written, flushed))
        return out


@contextmanager
def capture(module: Any) -> Iterator[tuple[Arrivals, Arrivals]]:
    """Replace module.stdout/stderr (``sys``) by :class:`Arrivals` while the block runs."""
    out, err = Arrivals(), Arrivals()
    saved = module.stdout, module.stderr
    module.stdout, module.stderr = out, err
    try:
        yield out, err
    finally:
        module.stdout, module.stderr = saved
        out.close_out()
        err.close_out()


@dataclass
class Results:
    """Rows of the table: metric -> {column -> text}."""

    columns: list[str]
    rows: dict[str, dict[str, str]] = field(default_factory=dict)
    raw: dict[tuple[str, str], float] = field(default_factory=dict)  # (column, key) -> value
    notes: list[str] = field(default_factory=list)

    def put(self, metric: str, column: str, text: str) -> None:
        self.rows.setdefault(metric, {})[column] = text

    def markdown(self) -> str:
        head = ["metric", *self.columns]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for metric, cells in self.rows.items():
            lines.append(
                "| " + " | ".join([metric, *(cells.get(c, "") for c in self.columns)]) + " |"
            )
        return "\n".join(lines)


def rank_table(rows: dict[int, dict[str, str]], counts: list[int]) -> None:
    """Print a metric per row and a rank count per column (``rows[count][metric]``)."""
    print("| metric | " + " | ".join(f"{n:,} ranks" for n in counts) + " |")
    print("|---|" + "---|" * len(counts))
    for label in rows[counts[0]]:
        print(f"| {label} | " + " | ".join(rows[n][label] for n in counts) + " |")


def ms(x: float) -> str:
    return "n/a" if x != x else f"{x * 1e3:.1f} ms"


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


@contextmanager
def kernel_router(ranks: int, nodes: int, state: str = "idle") -> Iterator[tuple[Any, Any, bytes]]:
    """A real router and history store for ``ranks`` fake ranks on ``nodes`` nodes, driven on
    the caller's thread (no I/O thread, as the tests drive it), with the cluster's key; closed
    after use. Imports the package wherever ``sys.path`` finds it (a ``--tree``'s first)."""
    import contextlib
    import secrets

    from jupyter_distributed.cluster.router import Router
    from jupyter_distributed.cluster.transport import Transport
    from jupyter_distributed.history.store import Store
    from jupyter_distributed.interface import RankInfo
    from jupyter_distributed.layout import Layout

    key = secrets.token_bytes(32)
    layout = Layout(nodes=nodes, procs_per_node=ranks // nodes)
    info = {r: RankInfo(r, "here", 100 + r, state, layout.coords(r)) for r in range(ranks)}
    with contextlib.ExitStack() as stack:  # (closed in the reverse order)
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="jd-bench-router-"))
        store = Store(Path(folder) / "history.sqlite")
        stack.callback(store.close)
        router = Router("jd-bench", store, info, key, lambda: None, print, Transport.ipc())
        stack.callback(router._loop.sock.context.term)  # (its socket's: any tree)
        stack.callback(router._loop.sock.close, linger=0)
        stack.callback(router.listener.close)
        yield router, store, key
