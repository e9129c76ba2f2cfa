"""The cost we add to a training step: the same DDP loop under torchrun and in a ``%%distributed``
cell (issue 26).

One loop (a small MLP, 256→512→512→10, batch 64, SGD) runs:

- **torchrun**: ``python -m torch.distributed.run --standalone --nproc-per-node N`` on a script
  that calls ``init_process_group`` and the loop; ``report`` is a no-op there;
- **cell**: ``%%distributed -n N --strategy ddp`` in an IPython shell with the magic loaded (the
  same path a notebook's kernel takes), the loop calling ``report(loss=..., step=...)`` every
  step; the cluster stays up between repeats, as a notebook's does.

Both print a line every 10 steps on every rank, one ``write`` a line, to a pipe another process
reads as they run (torchrun's ranks: the pipe this script reads, as a terminal or a notebook's
``!torchrun`` would; the cell's: the rank's capture). Steps/s is timed inside the ranks (rank
0, from a barrier after the warm-up steps to a barrier after the last step), so start-up is left
out of both.
Repeats alternate (torchrun first on even repeats, the cell first on odd ones) so both see the
same load; the ratio is cell ÷ torchrun per repeat, with the mean and a 95 % confidence interval
(Student's t) over repeats. gloo on CPU at 2 and 4 ranks; nccl at 1 rank where a GPU is present.

Beside steps/s each row has CPU per timed step: rank 0's main thread and its whole process
(every thread: gloo's, and in the cell the rank's I/O, capture and ZeroMQ threads), and, for
the cell, the kernel's process over the whole cell (ms per step, warm-up included). These are
steadier than wall time on a shared machine. Rank 0's main thread's wait for a core (Linux's
``schedstat``: runnable, not running) per step says how often something else took its core:
with as many ranks as cores, a step's all-reduce waits for the rank that lost it. ``--arms
torchrun cell bare`` adds ``bare``: the cell without ``report()`` or lines, which splits what
reporting costs from what the cell costs at all; ratios are to the first arm.

Usage: ``PYTHONPATH=python python benchmarks/bench_train.py [--ranks 2 4] [--repeat 5]
[--steps 2000] [--arms torchrun cell bare] [--every 10]``. The default run takes about 7 minutes
on 2 cores. Runs must be long for the goal (≥ 0.99×), 2,000 steps or more: torchrun starts
fresh rank processes every repeat, whose first seconds run slower (at 400 steps, ~2 s, torchrun
read 171 steps/s where 2,000-step runs read 174–196 on the same machine), while the cell's ranks
stay up between repeats, so short runs flatter the cell. A quiet-machine check: ``--no-gpu
--ranks 2 --repeat 8 --steps 2000`` (about 4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import statistics
import subprocess
import sys
import textwrap
import time
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_shell, use_checkout

LOOP = textwrap.dedent("""
    def train_loop(steps, warmup, every, report, device):
        import time
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(256, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 10),
        ).to(device)
        ids = [device.index] if device.type == "cuda" else None
        ddp = DistributedDataParallel(model, device_ids=ids)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        loss_fn = torch.nn.CrossEntropyLoss()
        x = torch.randn(64, 256, device=device)
        y = torch.randint(0, 10, (64,), device=device)

        def sync():
            dist.barrier()
            if device.type == "cuda":
                torch.cuda.synchronize()

        def waited():  # ns this thread was runnable but off a core (Linux schedstat)
            try:
                with open("/proc/thread-self/schedstat") as f:
                    return int(f.read().split()[1])
            except OSError:
                return 0

        start = cpu = main = wait = 0.0
        for i in range(warmup + steps):
            if i == warmup:
                sync()
                cpu, main, wait = time.process_time(), time.thread_time(), waited()
                start = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            value = loss.item()
            report(loss=value, step=i)
            if i % every == 0:
                print(f"step {i} loss {value:.4f}")
        sync()
        rate = steps / (time.perf_counter() - start)
        main, cpu = time.thread_time() - main, time.process_time() - cpu
        wait = (waited() - wait) / 1e6
        return rate, torch.get_num_threads(), 1e3 * main / steps, 1e3 * cpu / steps, wait / steps
""")

SCRIPT = LOOP + textwrap.dedent("""
    import os, sys
    import torch
    import torch.distributed as dist

    # One write per line, whatever PYTHONUNBUFFERED says, as in a terminal and as a rank's
    # stdout in the cell: unbuffered, print's text and its newline are two writes; block
    # buffered (a pipe without PYTHONUNBUFFERED), no line leaves before the end
    sys.stdout = open(sys.stdout.fileno(), "w", buffering=1, closefd=False)
    backend = sys.argv[1]
    local = int(os.environ["LOCAL_RANK"])
    device = torch.device(f"cuda:{local}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    dist.init_process_group(backend)
    every = int(sys.argv[5])
    result = train_loop(int(sys.argv[3]), int(sys.argv[4]), every, lambda **_: None, device)
    if dist.get_rank() == 0:
        with open(sys.argv[2], "w") as f:
            f.write(" ".join(map(str, result)))
    dist.destroy_process_group()
    # Leave without the interpreter's and C++'s teardown: torch 2.13's at exit, after Python
    # is done, sometimes destroys a thread still joinable ("terminate called without an
    # active exception", SIGABRT, no Python frame) and torchrun reports the run as failed
    # (4 of 30 short runs here); the result is written by then
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
""")


@dataclass
class Run:
    """One timed run: rank 0's steps/s and torch threads; its main thread's and its whole
    process's CPU per timed step (ms); the kernel's CPU per step over the whole cell (ms, the
    cell arms only)."""

    rate: float
    threads: int
    main_ms: float
    rank_ms: float
    wait_ms: float  # rank 0's main thread runnable but off a core, per step
    kernel_ms: float = math.nan

    @classmethod
    def parse(cls, values: Any) -> Run:
        rate, threads, main_ms, rank_ms, wait_ms = values
        return cls(float(rate), int(threads), float(main_ms), float(rank_ms), float(wait_ms))


def run_torchrun(n: int, backend: str, steps: int, warmup: int, every: int, tmp: Path) -> Run:
    script, out = tmp / "train.py", tmp / f"rate-{time.monotonic_ns()}"
    script.write_text(SCRIPT)
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "TMPDIR": str(tmp)}  # (torchelastic_* too)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={n}",
        str(script),
        backend,
        str(out),
        str(steps),
        str(warmup),
        str(every),
    ]
    done = subprocess.run(command, check=False, env=env, capture_output=True)  # noqa: S603 (ours)
    if done.returncode:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-15:]
        why = "\n".join(tail)
        raise SystemExit(f"torchrun at {n} ranks exited with {done.returncode}:\n{why}")
    run = Run.parse(out.read_text().split())
    out.unlink()
    return run


class Cell:
    """A warm ``%%distributed -n N --strategy ddp`` cluster with the loop defined on it."""

    def __init__(self, ip: Any, n: int) -> None:
        self.ip, self.flags = ip, f"-n {n} --strategy ddp"  # (nccl where each rank has a GPU)
        self._cell(LOOP)

    def _cell(self, body: str, pull: str = "") -> None:
        sink = io.StringIO()  # the lines every 10 steps: shown as in a notebook, not on screen
        with redirect_stdout(sink):
            res = self.ip.run_cell(f"%%distributed {self.flags}{pull}\n{body}")
        if not res.success:
            raise RuntimeError(f"the cell failed: {res.error_in_exec or res.error_before_exec}")

    def run(self, steps: int, warmup: int, every: int, bare: bool) -> Run:
        """The loop in a cell: ``report()`` every step and a line every ``every`` steps, or,
        ``bare``, neither (a no-op report, no lines)."""
        report, every = ("lambda **_: None", 10**9) if bare else ("report", every)
        cpu = time.process_time()
        self._cell(
            f"rate = train_loop({steps}, {warmup}, {every}, {report}, device)", " --pull rate"
        )
        kernel_ms = 1e3 * (time.process_time() - cpu) / (steps + warmup)
        run = Run.parse(self.ip.user_ns["rate"][0])
        run.kernel_ms = kernel_ms
        return run


# Student's t, two-sided 95 %, by degrees of freedom (beyond 30: 2.0)
_T95 = [
    12.71,
    4.30,
    3.18,
    2.78,
    2.57,
    2.45,
    2.36,
    2.31,
    2.26,
    2.23,
    2.20,
    2.18,
    2.16,
    2.14,
    2.13,
    2.12,
    2.11,
    2.10,
    2.09,
    2.09,
    2.08,
    2.07,
    2.07,
    2.06,
    2.06,
    2.06,
    2.05,
    2.05,
    2.05,
    2.04,
]


def mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (nan for one value)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan
    t = _T95[len(xs) - 2] if len(xs) - 1 <= len(_T95) else 2.0
    return m, t * statistics.stdev(xs) / math.sqrt(len(xs))


ARMS = {
    "torchrun": "torchrun",
    "cell": "cell: report() every step, a line every 10",
    "bare": "cell without report() or lines",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeat", type=int, default=4, help="alternated repeats per row")
    parser.add_argument("--steps", type=int, default=2000, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--every", type=int, default=10, help="a line every N steps")
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=list(ARMS),
        default=["torchrun", "cell"],
        help="what runs, in rotated order per repeat; ratios are to the first",
    )
    parser.add_argument("--no-gpu", action="store_true", help="leave out nccl at 1 rank")
    args = parser.parse_args()
    use_checkout()
    import torch

    rows = [(n, "gloo") for n in args.ranks]
    if torch.cuda.is_available() and not args.no_gpu:
        rows.insert(0, (1, "nccl"))  # first: the row only a GPU machine gives
    else:
        print("no GPU: nccl at 1 rank is left out", file=sys.stderr)
    ip, tmp = bench_shell("jd-bench-train-")
    from jupyter_distributed.magics import DistributedMagics

    session = next(
        m for m in ip.magics_manager.registry.values() if isinstance(m, DistributedMagics)
    ).session
    base = args.arms[0]
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"{args.repeat} alternated repeats of {args.steps} steps (+{args.warmup} warm-up); "
        f"ratios to {ARMS[base]}"
    )
    print(
        "| ranks | backend | arm | steps/s | ÷ first arm (95 % CI) | rank 0 main thread CPU "
        "ms/step | ... waiting for a core ms/step | rank 0 process CPU ms/step | kernel CPU "
        "ms/step | threads |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    try:
        for n, backend in rows:
            cell = Cell(ip, n)
            runs: dict[str, list[Run]] = {arm: [] for arm in args.arms}
            for i in range(args.repeat):
                k = i % len(args.arms)  # rotated: each arm goes first as often as the others
                order = args.arms[k:] + args.arms[:k]
                for arm in order if i % 2 == 0 else order[::-1]:
                    if arm == "torchrun":
                        run = run_torchrun(n, backend, args.steps, args.warmup, args.every, tmp)
                    else:
                        run = cell.run(args.steps, args.warmup, args.every, arm == "bare")
                    runs[arm].append(run)
            for arm in args.arms:
                got = runs[arm]
                ratio, half = mean_ci(
                    [r.rate / b.rate for r, b in zip(got, runs[base], strict=True)]
                )
                print(
                    f"| {n} | {backend} | {arm} | {statistics.median(r.rate for r in got):.1f} "
                    f"| {ratio:.3f} ± {half:.3f} "
                    f"| {statistics.median(r.main_ms for r in got):.3f} "
                    f"| {statistics.median(r.wait_ms for r in got):.3f} "
                    f"| {statistics.median(r.rank_ms for r in got):.3f} "
                    f"| {statistics.median(r.kernel_ms for r in got):.3f} "
                    f"| {got[-1].threads} |",
                    flush=True,
                )
            print(f"(load {os.getloadavg()[0]:.1f})", flush=True)
            session.stop()
    finally:
        session.shutdown()


if __name__ == "__main__":
    main()
