"""What a node relay's process costs to start: its imports (issue 26).

    python benchmarks/bench_relay_import.py [--rounds 15] [--tree OLD_PYTHON_DIR]

Each round starts, in turn for each source tree (this checkout's ``python/``, and ``--tree``,
e.g. an exported older commit's), a fresh interpreter that imports the relay's and the
aggregator's modules, and reads ``-X importtime``'s cumulative time of
``jupyter_distributed.cluster.relay``, the process's own CPU time (``RUSAGE_CHILDREN``), and how
many of the package's modules it holds (and whether any is the kernel's history or interface).
A bare interpreter (``-c pass``) is timed in the same rounds, so its part can be taken away.
The rounds alternate the trees, so a change of the machine's load falls on both.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE = (
    "import jupyter_distributed.cluster.relay, jupyter_distributed.cluster.aggregator, json, sys\n"
    "mods = [m for m in sys.modules if m.startswith('jupyter_distributed')]\n"
    "kernel = [m for m in mods if m.startswith(('jupyter_distributed.history',"
    " 'jupyter_distributed.interface'))]\n"
    "print(json.dumps([len(mods), len(kernel)]))"
)


def one(tree: str | None) -> tuple[float, float, list[int]]:
    """(relay's cumulative import µs, the process's CPU s, [modules, kernel-side modules])."""
    env = {"PYTHONPATH": tree} if tree else {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = PROBE if tree else "pass"
    out = subprocess.run(  # noqa: S603 (this interpreter, our own probe)
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    cumulative = 0.0
    for line in out.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == "jupyter_distributed.cluster.relay":
            cumulative = float(parts[1])
    counts = json.loads(out.stdout.strip().splitlines()[-1]) if tree else [0, 0]
    return cumulative, cpu, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tree", help="another source tree's python/ folder (e.g. older code)")
    args = parser.parse_args()
    trees = {"this checkout": str(HERE.parent / "python")}
    if args.tree:
        trees["--tree"] = str(Path(args.tree).resolve())
    got: dict[str, list[tuple[float, float, list[int]]]] = {name: [] for name in trees}
    bare: list[float] = []
    for _ in range(args.rounds):
        bare.append(one(None)[1])
        for name, tree in trees.items():
            got[name].append(one(tree))
    base = statistics.median(bare) * 1e3
    print(f"bare interpreter (-c pass): CPU median {base:.0f} ms over {args.rounds} rounds")
    print("| tree | relay import, median / p90 (importtime, ms) | process CPU less bare, median ms "
          "| package modules held | of them history/ or interface |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, rows in got.items():
        imports = sorted(r[0] / 1e3 for r in rows)
        cpu = statistics.median(r[1] for r in rows) * 1e3 - base
        p90 = imports[min(len(imports) - 1, int(0.9 * len(imports)))]
        mods, kernel = rows[-1][2]
        print(
            f"| {name} | {statistics.median(imports):.0f} / {p90:.0f} | {cpu:.0f} | {mods} "
            f"| {kernel} |"
        )


if __name__ == "__main__":
    main()
