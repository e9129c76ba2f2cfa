"""Time from cell start to a ready torch process group (gloo, CPU), for 2 and 4 ranks.

Compares, in one run on one machine:
- ``%%distributed -n N --strategy ddp`` on a fresh local cluster (the cell's first line runs after
  ``init_process_group``),
- ``torchrun --standalone --nproc-per-node N`` running a script that imports torch and calls
  ``init_process_group("gloo")``,
- accelerate's ``notebook_launcher`` (forked processes) running the same function, when
  accelerate is installed (``pip install accelerate torch==2.13.0`` keeps the CPU torch).

"Ready" is the latest wall-clock time at which a rank finished a barrier; each row is the median
of ``--repeat`` runs. Usage: ``PYTHONPATH=python python benchmarks/bench_torch.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import sys, time
    import torch.distributed as dist
    dist.init_process_group("gloo")
    dist.barrier()
    with open(sys.argv[1] + "." + str(dist.get_rank()), "w") as f:
        f.write(repr(time.time()))
    dist.destroy_process_group()
""")


def bench_import(n: int, tmp: Path) -> float:
    """One ``import torch`` in a fresh interpreter (the yardstick of the first ddp cell)."""
    start = time.time()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.time() - start


def bench_magic(n: int, tmp: Path, warm: bool = False) -> float:
    """The first ddp cell of a kernel: no fork server yet (it is stopped first), unless
    ``warm`` (a later torch cluster of the same kernel, whose fork server is up)."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    from jupyter_distributed.cluster.zygote import stop_fork_servers
    from jupyter_distributed.history.store import Store
    from jupyter_distributed.magics import DistributedMagics
    from jupyter_distributed.session import Session

    ip = start_ipython() or get_ipython()  # type: ignore[no-untyped-call]
    magics = DistributedMagics(ip, Session(Store(tmp / "bench.sqlite3")))
    ip.register_magics(magics)
    if not warm:
        stop_fork_servers()
    try:
        start = time.time()
        result = ip.run_cell(
            f"%%distributed -n {n} --strategy ddp --quiet --pull ready\n"
            "import time\ndist.barrier()\nready = time.time()"
        )
        if result.error_in_exec is not None:
            raise result.error_in_exec
        return float(max(ip.user_ns["ready"])) - start
    finally:
        magics.session.shutdown()


def _ready_times(prefix: Path, n: int) -> float:
    return max(float(Path(f"{prefix}.{r}").read_text()) for r in range(n))


def bench_torchrun(n: int, tmp: Path) -> float:
    script, prefix = tmp / "pg.py", tmp / f"torchrun-{n}-{time.monotonic_ns()}"
    script.write_text(SCRIPT)
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or "torchrun"
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    start = time.time()
    command = [torchrun, "--standalone", f"--nproc-per-node={n}", str(script), str(prefix)]
    subprocess.run(  # noqa: S603 (our own command line)
        command,
        check=True,
        env=env,
        capture_output=True,
    )
    return _ready_times(prefix, n) - start


def _accelerate_fn(prefix: str) -> None:
    import torch.distributed as dist
    from accelerate import PartialState

    PartialState()  # initialises the process group as accelerate users do
    dist.barrier()
    Path(f"{prefix}.{dist.get_rank()}").write_text(repr(time.time()))


def bench_accelerate(n: int, tmp: Path) -> float:
    prefix = tmp / f"accelerate-{n}-{time.monotonic_ns()}"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import bench_torch as b;"
        "from accelerate import notebook_launcher;"
        "notebook_launcher(b._accelerate_fn, (sys.argv[2],), num_processes=int(sys.argv[3]))"
    )
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    start = time.time()
    command = [sys.executable, "-c", code, str(Path(__file__).parent), str(prefix), str(n)]
    subprocess.run(  # noqa: S603 (our own command line)
        command,
        check=True,
        env=env,
        capture_output=True,
    )
    return _ready_times(prefix, n) - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import torch

    methods: dict[str, Callable[[int, Path], float]] = {
        "import torch (one fresh interpreter)": bench_import,
        "%%distributed --strategy ddp (first)": bench_magic,
        "  … a later cluster, fork server up": lambda n, tmp: bench_magic(n, tmp, warm=True),
        "torchrun --standalone": bench_torchrun,
    }
    try:
        import accelerate
    except ImportError:
        print("accelerate is not installed: notebook_launcher is left out", file=sys.stderr)
    else:
        methods[f"accelerate {accelerate.__version__} notebook_launcher"] = bench_accelerate
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, median of {args.repeat}")
    print(f"{'method':<42} {'ranks':>5} {'to process group ready':>22}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.ranks:
            for name, bench in methods.items():
                times = [bench(n, Path(tmp)) for _ in range(args.repeat)]
                print(f"{name:<42} {n:>5} {statistics.median(times):>20.2f} s", flush=True)


if __name__ == "__main__":
    main()
