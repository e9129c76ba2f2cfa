"""What a light entry point costs: building the magic's flags, and the Jupyter server's start-up
(its extension module and the backends' plug-ins), each in a fresh interpreter.

    python benchmarks/bench_imports.py [TREE ...]

Each TREE is a checkout whose ``python/`` is put first on the path (default: this one), so an
older commit (``git worktree add /tmp/old REV``) is measured beside this one in the same run.
Prints, per tree and entry point, the median wall time of 5 runs, our modules loaded, and
whether pyzmq and the engine (``cluster/``, or ``backends/router`` before it) were loaded.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ENTRIES = {
    "flags": "from jupyter_distributed.arguments import flag_owners; flag_owners()",
    "server start-up": (
        "import jupyter_distributed.server\n"
        "from jupyter_distributed.backends import followable; followable()"
    ),
}
PROBE = """
import json, sys, time
t = time.perf_counter()
exec({code!r})
ms = (time.perf_counter() - t) * 1000
ours = [m for m in sys.modules if m.startswith("jupyter_distributed")]
engine = any(m.startswith(("jupyter_distributed.cluster", "jupyter_distributed.backends.router"))
             for m in ours)
print(json.dumps([ms, len(ours), "zmq" in sys.modules, engine]))
"""


def measure(tree: Path, code: str, runs: int = 5) -> tuple[float, int, bool, bool]:
    env = {**os.environ, "PYTHONPATH": str(tree / "python")}
    found = []
    for _ in range(runs):
        out = subprocess.run(  # noqa: S603 (our own interpreter and probe)
            [sys.executable, "-c", PROBE.format(code=code)],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        found.append(json.loads(out.strip().splitlines()[-1]))
    return statistics.median(f[0] for f in found), found[0][1], found[0][2], found[0][3]


def main() -> None:
    trees = [Path(a).resolve() for a in sys.argv[1:]] or [Path(__file__).resolve().parents[1]]
    print(f"{'tree':<28} {'entry point':<16} {'ms (median)':>11} {'our modules':>11} pyzmq engine")
    for tree in trees:
        for name, code in ENTRIES.items():
            ms, ours, zmq, engine = measure(tree, code)
            print(f"{tree.name:<28} {name:<16} {ms:>11.0f} {ours:>11} {zmq!s:>5} {engine!s:>6}")


if __name__ == "__main__":
    main()
