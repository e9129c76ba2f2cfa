"""CPU per line of an output flood, kernel and ranks apart (issue 26: a line's path).

Each rank prints ``--lines`` lines as fast as it can, in a warm ``%%distributed`` cell; the
kernel's CPU (``time.process_time`` over the cell) and the ranks' (``/proc/PID/stat``, every
thread) per line printed, and the cell's wall time, per repeat. CPU is steadier than wall time
on a shared machine.

    PYTHONPATH=python python benchmarks/flood_cpu.py [--ranks 2 8] [--lines 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_shell, use_checkout

TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """CPU seconds of process ``pid`` so far, every thread."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    use_checkout()
    ip, _ = bench_shell("jd-flood-cpu-")
    print("| ranks | wall s (each) | lines/s (median) | kernel µs/line | ranks µs/line |")
    print("|---|---|---|---|---|")
    for n in args.ranks:
        flags = f"%%distributed -n {n}"

        def cell(body: str, pull: str = "", flags: str = flags) -> None:
            with redirect_stdout(io.StringIO()):
                res = ip.run_cell(f"{flags}{pull}\n{body}")
            if not res.success:
                raise RuntimeError(str(res.error_in_exec))

        cell("import os\n_jd_pid = os.getpid()", " --pull _jd_pid")
        pids = [int(p) for p in ip.user_ns["_jd_pid"]]
        walls, kernel, ranks = [], [], []
        for _ in range(args.repeat):
            k0, r0, t0 = time.process_time(), sum(map(cpu_of, pids)), time.perf_counter()
            cell(f"for i in range({args.lines}):\n    print(f'line {{i}} of a flood')")
            wall = time.perf_counter() - t0
            total = args.lines * n
            walls.append(wall)
            kernel.append(1e6 * (time.process_time() - k0) / total)
            ranks.append(1e6 * (sum(map(cpu_of, pids)) - r0) / total)
        print(
            f"| {n} | {' '.join(f'{w:.2f}' for w in walls)} "
            f"| {statistics.median(args.lines * n / w for w in walls):,.0f} "
            f"| {statistics.median(kernel):.2f} | {statistics.median(ranks):.2f} |",
            flush=True,
        )
        ip.magics_manager.registry["DistributedMagics"].session.stop()
    ip.magics_manager.registry["DistributedMagics"].session.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
