"""A rank's last words: how often a line that a rank wrote just before it died is shown under
the cell and kept in the history (a correctness count, not a time).

    PYTHONPATH=python python benchmarks/bench_last_words.py [--tries 10] [--relays auto|always]

Rank 1 of 2 writes ``last words N``, then dies at once, in four ways: a print, then
``os._exit(3)``; a C-level write to fd 1, then ``os._exit(3)``; a C-level write to fd 2, then
``os.abort()``; a flushed print, then a SIGKILL to itself. Each try is a new cluster (the dead
rank's is replaced). The table counts, per way, the tries whose line showed under the cell (in
its output, not only in the failure's last lines) and those whose line the history kept.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import time
from typing import Any

from common import bench_shell

WAYS = {
    "print, os._exit(3)": "print('last words {i}')\nos._exit(3)",
    "os.write(1), os._exit(3)": "os.write(1, b'last words {i}\\n')\nos._exit(3)",
    "os.write(2), os.abort()": "os.write(2, b'last words {i}\\n')\nos.abort()",
    "print(flush=True), SIGKILL": "print('last words {i}', flush=True)\nos.kill(os.getpid(), 9)",
}


def one(ip: Any, body: str, i: int) -> tuple[bool, bool]:
    """(shown under the cell, kept in the history) for one try."""
    out = io.StringIO()
    cell = "\n".join("    " + line for line in body.format(i=i).splitlines())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        ip.run_cell(f"%%distributed -n 2\nimport os\nif rank == 1:\n{cell}\nprint('ok')")
    text = out.getvalue()
    shown = f"last words {i}" in text.replace(f"| last words {i}", "")
    found = re.search(r"%distributed logs (\S+)\)", text)
    if found is None:
        return shown, False
    store = ip.magics_manager.registry["DistributedMagics"].session.store
    deadline = time.monotonic() + 2  # (behind a relay the line may come a moment later)
    while time.monotonic() < deadline:
        if any(x.text == f"last words {i}" for x in store.logs(found.group(1), limit=100)):
            return shown, True
        time.sleep(0.05)
    return shown, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--relays", default="auto", choices=("auto", "always"))
    args = parser.parse_args()
    rows = []
    relays = os.environ["JUPYTER_DISTRIBUTED_RELAYS"] = args.relays  # (before the shell)
    ip, _tmp = bench_shell("jd-lastwords-")
    for way, body in WAYS.items():
        got = [one(ip, body, i) for i in range(args.tries)]
        rows.append((relays, way, sum(s for s, _ in got), sum(h for _, h in got)))
        print(f"{relays} {way}: {rows[-1][2:]}", file=sys.stderr)
    ip.run_line_magic("distributed", "stop")
    print("\n| relays | how rank 1 dies | shown under the cell | kept in the history |")
    print("|---|---|---|---|")
    for relays, way, shown, kept in rows:
        print(f"| {relays} | {way} | {shown} of {args.tries} | {kept} of {args.tries} |")


if __name__ == "__main__":
    main()
