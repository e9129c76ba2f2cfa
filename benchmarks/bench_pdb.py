"""The pdb round trip on a local rank: from the notebook's answer at a rank's pdb prompt to that
command's output under the cell, and to the rank's next prompt.

Run: ``python benchmarks/bench_pdb.py [--ranks 2] [--commands 100]``. A real kernel (started
through jupyter_client, with the checkout's ``python/`` on its path) runs ``%%distributed -n N``
where rank 1 stops at ``breakpoint()``; the client answers ``p i`` (``i`` counts) as the
notebook would (an ``input_reply`` on the stdin channel) and stamps the moment it sent it, the
moment the ``[rank 1] <i>`` line reached it on iopub, and the moment the next ``input_request``
came. Median and p90 over the commands after 5 warm-ups. Loopback only; bounded in count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]
WARM = 5


def measure(ranks: int, commands: int) -> tuple[list[float], list[float]]:
    """(answer → output, answer → next prompt) in seconds, per command after the warm-ups."""
    store = Path(tempfile.mkdtemp()) / "history.sqlite3"
    path = os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "JUPYTER_DISTRIBUTED_STORE": str(store)}
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    to_output: list[float] = []
    to_prompt: list[float] = []
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute_interactive("%load_ext jupyter_distributed", timeout=60)
        sent = {"t": 0.0, "i": -1}
        total = WARM + commands

        def on_stdin(msg: dict[str, Any]) -> None:
            now = time.perf_counter()
            if sent["i"] >= WARM:
                to_prompt.append(now - sent["t"])
            sent["i"] += 1
            answer = f"p {sent['i']}" if sent["i"] < total else "c"
            sent["t"] = time.perf_counter()
            kc.input(answer)

        def on_output(msg: dict[str, Any]) -> None:
            text = msg["content"].get("text", "")
            if sent["i"] >= WARM and f"[rank 1] {sent['i']}\n" in text:
                to_output.append(time.perf_counter() - sent["t"])

        code = f"%%distributed -n {ranks}\nif rank == 1:\n    breakpoint()\n"
        reply = kc.execute_interactive(
            code, allow_stdin=True, stdin_hook=on_stdin, output_hook=on_output, timeout=300
        )
        if reply["content"]["status"] != "ok":
            raise SystemExit(f"the cell failed: {reply['content']}")
        kc.execute_interactive("%distributed stop", timeout=60)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return to_output, to_prompt


def _ms(values: list[float]) -> str:
    if not values:
        return "no samples"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    median = statistics.median(ordered)
    return f"median {median * 1e3:.1f} ms, p90 {p90 * 1e3:.1f} ms (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--commands", type=int, default=100)
    args = parser.parse_args()
    if not 2 <= args.ranks <= 16 or not 1 <= args.commands <= 10_000:
        raise SystemExit("--ranks must be 2-16 and --commands 1-10000")
    to_output, to_prompt = measure(args.ranks, args.commands)
    print(f"pdb round trip on local rank 1 of {args.ranks} ({sys.platform}, {os.cpu_count()} cpus)")
    print(f"  answer -> its output under the cell: {_ms(to_output)}")
    print(f"  answer -> the next prompt:          {_ms(to_prompt)}")


if __name__ == "__main__":
    main()
