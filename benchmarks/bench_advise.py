"""``%distributed advise`` against measurement: a fixed suite of scenarios (models × ranks ×
global batch) on CPU ranks over gloo, every launchable layout of each run for real.

Run: ``python benchmarks/bench_advise.py [--quick | --only mlp:4:8,...] [--ranks 2,4]
[--repeats R] [--budget S] [--deadline S] [--shaped RATE[/DELAY] | --two-nodes] [--probe-only]
[--no-trial] [--json out] [--code DIR]``.

Per scenario: a ``--quick`` probe of the ranks, ``advise()`` (uncalibrated), the calibration trial
(``--calibrate``'s own launches, ≤ 60 s, its wall time printed; ``--no-trial`` skips it; its
corrections are scored on the layouts it did not run), then every layout it lists that fits,
measured through its own launch line (``verify``: peak live tensor bytes and ``--steps`` timed steps
per run, default 30, up to ``R`` runs; the measured step is the median of every timed step of its
runs, pooled). It prints, per layout, predicted against measured step time (with a 95 % interval
over the runs' medians, and one of the pooled median) and memory; per scenario, whether the top pick
is within 5 % of the best measured (or tied with it: intervals overlap) and whether the best is in
the top 3; and the calibrated error: corrections fitted on the top layout (one trial) and on the top
2 (what ``--verify 2`` does), applied to the others; and each layout scaled by its own ranks' share
of the cores, the load probe: the plain block timed on its ranks between its steps (``probed``) and
after them (``after``, how it was first done); the load average at each scenario's start and end;
the wall time of its probe, advice and measurement. The runs are interleaved: one round over every
layout, then the next, so the trial and the layouts it is applied to are measured in the same
minutes; ``--budget S`` starts no new round once a scenario's measurement has taken S seconds (at
least one round is run), ``--deadline S`` no new round or scenario once the whole run has. Then the
median and worst errors of the suite. ``--json`` keeps each layout's predicted parts and the ranks'
and the advisor's time of the plain block.

``--shaped RATE[/DELAY]`` (root, ``ip``, ``tc``, mpirun): the ranks run as two "nodes", this
machine and a network namespace joined by a veth pair (``twohosts.py``, the test suite's
two-host set-up) whose link is shaped with ``tc`` (``tbf`` at RATE; with DELAY ``netem``,
where the kernel has it), each node on half of the cores; the probe (gloo, as the layouts)
sees an intra- and an inter-node link class. ``--two-nodes``: the same, unshaped.
``--probe-only``: just the probes of the chosen scenarios' clusters (to check the shaping).

Fixed before measuring: 5 models × 2 rank counts (``--ranks``, default 2,4) × 2 global batches
= 20 scenarios (``--quick``: each model once, at the first rank count and batch 8). All on
this machine; no published replays here (see RESULTS.md).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from advise_scores import score, show, summary
from common import bench_shell, use_checkout
from twohosts import TwoHosts, parse_shape, two_hosts

MODELS = """
import torch
def mlp():  # embedding, 3 MLP blocks, a head
    return torch.nn.Sequential(torch.nn.Embedding(512, 64),
        *[torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
          for _ in range(3)], torch.nn.Linear(64, 512))
def wide():  # few large matrices
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
def deep():  # many small operations
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh())
                                 for _ in range(16)])
def tfm():  # a small transformer
    return torch.nn.Sequential(torch.nn.Embedding(1000, 64),
        *[torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
          for _ in range(2)], torch.nn.Linear(64, 1000))
def temp():  # a block with a large temporary (an outer product) that formulas miss
    return torch.nn.Sequential(torch.nn.Linear(64, 64), Outer(), torch.nn.Linear(64, 64))
class Outer(torch.nn.Module):
    def forward(self, x):
        return (x.unsqueeze(-1) * x.unsqueeze(-2)).sum(-1)
"""
SEQ = {"mlp": 16, "wide": None, "deep": None, "tfm": 32, "temp": None}
LOG = io.StringIO()  # what the cells printed, shown when a scenario fails
PROBE = (
    "from jupyter_distributed.worker.probe import run_probe as _jd_run_probe\n"
    "_jd_probe = _jd_run_probe({k: v for k, v in globals().items() if k != 'comm'}, quick=True, "
    "budget=1.5, pair_bytes=1024 * 1024)\ndel _jd_run_probe\n"
)  # gloo, as the layouts: under mpirun the probe would use mpi4py's ``comm``


def scenarios(ranks: list[int]) -> list[tuple[str, int, int]]:
    return [(m, n, b) for m in SEQ for n in ranks for b in (8, 16)]


def probe(ip: Any, n: int, hosts: TwoHosts | None) -> dict[str, Any]:
    """A ``--quick`` probe of the scenario's ranks: ``%distributed probe`` on one node; on two,
    gloo's (the layouts') on a DDP cluster of the two hosts."""
    from jupyter_distributed.advise.store import newest_probe
    from jupyter_distributed.probe import assemble

    session = ip.user_ns["_jd_bench_session"]
    if hosts is None:
        ip.run_line_magic("distributed", f"probe --quick -n {n}")
        got = newest_probe(session.store, n, None)
        assert got is not None
        return got
    line = (f"%%distributed --nodes 2 --procs-per-node {n // 2} --strategy ddp "
            f"{hosts.launch_options(threads(n, hosts))} --pull _jd_probe --quiet")  # fmt: skip
    result = ip.run_cell(f"{line}\n{PROBE}")
    per_rank = ip.user_ns.pop("_jd_probe", None)
    if result.error_in_exec is not None or not per_rank:
        raise RuntimeError("the two-node probe failed; see above")
    placed = {r.rank: r.host for r in session.live["mpi"].cluster.plan.ranks}
    return {**assemble(per_rank, placed), "run_id": "two-node gloo probe"}


def threads(n: int, hosts: TwoHosts) -> int:
    """Torch threads of a rank on two nodes: its node's cores ÷ its node's ranks."""
    return max(1, len(hosts.cores[0]) // (n // 2))


def scenario(ip: Any, model: str, n: int, batch: int, args: Any, hosts: TwoHosts | None
             ) -> dict[str, Any]:  # fmt: skip
    from jupyter_distributed.advise import advise

    LOG.seek(0)
    LOG.truncate()
    load_before = os.getloadavg()[0]
    wall = {}
    nodes, per_node = (2, n // 2) if hosts else (1, n)
    with contextlib.redirect_stdout(LOG), contextlib.redirect_stderr(LOG):
        began = time.perf_counter()
        links = probe(ip, n, hosts)
        wall["probe"] = time.perf_counter() - began
        began = time.perf_counter()
        advice = advise(ip.user_ns[model], global_batch=batch, seq=SEQ[model], nodes=nodes,
                        procs_per_node=per_node, probe=links)  # fmt: skip
        answer_s = wall["advise"] = time.perf_counter() - began
        began = time.perf_counter()
        if hosts is not None:  # the launch lines as shown, run on the two hosts
            extra = hosts.launch_options(threads(n, hosts))
            advice.layouts = [dataclasses.replace(r, launch=f"{r.launch} {extra}")
                              for r in advice.layouts]  # fmt: skip
        trial_fit = None
        if not args.no_trial:  # the calibration trial, as --calibrate runs it, before the rounds
            began = time.perf_counter()
            trial_fit = calibration_trial(advice, ip, model)
            wall["trial"] = time.perf_counter() - began
        began = time.perf_counter()
        rounds, failed = interleaved(advice, ip, model, args.repeats, args.budget, args.stop_at,
                                     args.steps)  # fmt: skip
        wall["measure"] = time.perf_counter() - began
    measured = [r for r in advice.layouts if r.measured]
    if not measured:
        raise RuntimeError(f"every layout failed: {failed}")
    out, fits = score(measured, trial_fit)
    best = min(out, key=lambda x: x["measured_s"])
    top = out[0]
    tie = top["measured_s"] - top["ci_s"] <= best["measured_s"] + best["ci_s"]
    return {
        "model": model, "ranks": n, "global_batch": batch, "answer_s": answer_s,
        "where": f" as 2 nodes ({hosts.shape or 'unshaped'})" if hosts else "",
        "links": links.get("groups", {}), "allreduce": links.get("allreduce", []),
        "wall_s": wall, "rounds": rounds, "failed": failed,
        "load": [round(x, 1) for x in (load_before, os.getloadavg()[0])], **fits,
        "layouts": out, "top_within_5": top["measured_s"] <= 1.05 * best["measured_s"] or tie,
        "best_in_top3": best["rank"] <= 3, "trial": trial_fit,
    }  # fmt: skip


def calibration_trial(advice: Any, ip: Any, model: str) -> dict[str, Any] | None:
    """``--calibrate``'s trial (its own launches, within its 60 s) on a copy of ``advice``:
    its corrections, or None where a layout of it failed."""
    from jupyter_distributed.advise.intake import AdviseError
    from jupyter_distributed.advise.trial import trial

    one = copy.copy(advice)
    one.layouts = list(advice.layouts)
    try:
        return trial(one, ip, model, None, "adamw")
    except AdviseError as exc:
        print(f"  calibration trial FAILED: {exc}", file=sys.__stdout__)
        return None


def interleaved(advice: Any, ip: Any, model: str, repeats: int, budget: float | None,
                stop_at: float = float("inf"), steps: int = 10,
                ) -> tuple[int, dict[str, str]]:  # fmt: skip
    """Measure every layout up to ``repeats`` times, one round over all of them after another,
    so that the trial (the top layout) and the layouts its correction is applied to are measured
    in the same minutes, not one layout's runs before the next one's; no new round once
    ``budget`` seconds are spent, or after ``stop_at`` (``time.perf_counter``). Each row then
    holds the median of its runs (step, and the ranks' plain block between and after its
    steps). Each run times ``steps`` steps; a row's step is the median of every timed step of
    its runs (its slowest rank's), pooled (``step_s_runs`` keeps each run's median, for the
    interval between runs). A layout whose run fails is measured no more and named with its
    error (the others go on). Returns the rounds run and the failed layouts."""
    from jupyter_distributed.advise.intake import AdviseError
    from jupyter_distributed.advise.verify import verify

    runs: dict[int, list[dict[str, Any]]] = {}
    began = time.perf_counter()
    done = 0

    def another() -> bool:
        now = time.perf_counter()
        return now < stop_at and (budget is None or now - began < budget)

    failed: dict[int, str] = {}
    while done < repeats and (done == 0 or another()):
        for i, row in enumerate(advice.layouts):
            if not row.fits or i in failed:
                continue
            one = copy.copy(advice)  # verify's top 1 of this layout alone
            one.layouts = [row]
            try:
                verify(one, 1, ip, model, None, "adamw", 1, steps=steps)
            except AdviseError as exc:
                said = [x for x in LOG.getvalue().splitlines() if x.strip()]
                failed[i] = f"{exc} ({said[-1].strip() if said else 'no output'})"
                continue
            runs.setdefault(i, []).append(dict(one.layouts[0].measured or {}))
        done += 1
    for i, got in runs.items():
        row = advice.layouts[i]
        merged = dict(got[-1])
        merged["step_s_runs"] = [g["step_s"] for g in got]
        merged["step_s_steps"] = [t for g in got for t in g.get("step_s_steps", ())]
        merged["step_s"] = statistics.median(merged["step_s_steps"] or merged["step_s_runs"])
        for key in ("plain_s", "plain_during_s"):
            merged[key] = statistics.median(g.get(key, 0.0) for g in got)
        merged["gib"] = max(g["gib"] for g in got)
        merged["memory_error"] = row.memory.total / (merged["gib"] * 2**30) - 1
        merged["time_error"] = row.step_s / merged["step_s"] - 1
        merged["samples_per_s"] = advice.inputs["global_batch"] / merged["step_s"]
        advice.layouts[i] = dataclasses.replace(row, measured=merged)
    return done, {advice.layouts[i].candidate.name: why for i, why in failed.items()}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each model once (first ranks, 8)")
    parser.add_argument("--only", help="scenarios as model:ranks:batch, comma-separated")
    parser.add_argument("--ranks", default="2,4", help="rank counts of the suite (default 2,4)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds over the layouts")
    parser.add_argument("--steps", type=int, default=30,
                        help="timed steps a run of the rounds (the trial: 10)")  # fmt: skip
    parser.add_argument("--budget", type=float, help="no new round after S s of a scenario")
    parser.add_argument("--deadline", type=float, help="no new round or scenario after S s")
    parser.add_argument("--shaped", help="two nodes, their link shaped: RATE[/DELAY]")
    parser.add_argument("--two-nodes", action="store_true", help="two nodes, unshaped")
    parser.add_argument("--probe-only", action="store_true", help="only probe the clusters")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--code", type=Path, help="the python/ folder to advise and run with (an A/B's old arm; "
        "default: this checkout's), this benchmark's own code either way"
    )  # fmt: skip
    parser.add_argument("--no-trial", action="store_true", help="skip the calibration trial")
    args = parser.parse_args()
    try:
        args.ranks = [int(x) for x in args.ranks.split(",")]
        args.shape = parse_shape(args.shaped) if args.shaped else None
    except ValueError as exc:
        parser.error(str(exc))
    args.hosts = bool(args.shaped or args.two_nodes)
    suite = scenarios(args.ranks)
    if args.only:
        want = args.only.split(",")
        bad = [w for w in want if w.count(":") != 2 or w.split(":")[0] not in SEQ]
        if bad:
            parser.error(f"--only {bad[0]}: give model:ranks:batch, a model of {', '.join(SEQ)}")
        suite = [(m, int(n), int(b)) for m, n, b in (w.split(":") for w in want)]
    elif args.quick:
        suite = [(m, args.ranks[0], 8) for m in SEQ]
    if args.hosts and any(n % 2 for _, n, _ in suite):
        parser.error("two nodes need an even number of ranks")
    args.suite = suite
    return args


def suite_shell(prefix: str, code: Path | None = None) -> tuple[Any, Any, Path]:
    """A shell on this checkout (or the package under ``code``) with ``%%distributed`` loaded
    and the suite's models defined; its magics (the session under ``_jd_bench_session``) and
    its temporary folder."""
    if code is None:
        use_checkout(always=True)
    else:  # here and, through PYTHONPATH, in the ranks it starts
        sys.path.insert(0, str(code.resolve()))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(code.resolve()), os.environ.get("PYTHONPATH")])
        )
    ip, tmp = bench_shell(prefix)
    from jupyter_distributed.magics import DistributedMagics

    magics = next(m for m in ip.magics_manager.registry.values()
                  if isinstance(m, DistributedMagics))  # fmt: skip
    ip.user_ns["_jd_bench_session"] = magics.session
    ip.run_cell(MODELS)
    return ip, magics, tmp


def main() -> None:
    args = arguments()
    began = time.perf_counter()
    args.stop_at = began + args.deadline if args.deadline else float("inf")
    ip, magics, _tmp = suite_shell("bench-advise-", args.code)
    done: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        hosts = None
        if args.hosts:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            try:
                hosts = stack.enter_context(two_hosts(workdir, args.shape))
            except RuntimeError as exc:
                raise SystemExit(f"bench_advise: {exc}") from None
            print(f"two nodes: {hosts.here} (cores {hosts.cores[0]}) and {hosts.there} in "
                  f"namespace {hosts.netns} (cores {hosts.cores[1]}), link "
                  f"{hosts.shape or 'unshaped'}")  # fmt: skip
        stack.callback(magics.session.shutdown)
        for model, n, batch in args.suite:
            if time.perf_counter() > args.stop_at:
                print(f"\n--deadline {args.deadline:.0f} s: not run from {model}:{n}:{batch} on")
                break
            try:
                if args.probe_only:
                    t0 = time.perf_counter()
                    with contextlib.redirect_stdout(LOG), contextlib.redirect_stderr(LOG):
                        links = probe(ip, n, hosts)
                    print(f"\nprobe of {n} ranks ({time.perf_counter() - t0:.0f} s):")
                    for link, g in links["groups"].items():
                        print(f"  {link}: {g['pairs']} pairs, latency {g['latency_us']:.0f} µs, "
                              f"bandwidth {g['bandwidth_gbs']:.3f} GB/s")  # fmt: skip
                    continue
                s = scenario(ip, model, n, batch, args, hosts)
            except Exception as exc:  # noqa: BLE001 (say which scenario failed, go on)
                print(f"\n{model} × {n}, batch {batch}: FAILED {type(exc).__name__}: {exc}")
                print("  " + "\n  ".join(LOG.getvalue().splitlines()[-15:]))
                if "KeyboardInterrupt" in LOG.getvalue():
                    break  # (the magic turned Ctrl-C into an interrupted cell)
                continue
            show(s)
            done.append(s)
            if args.json:
                args.json.write_text(json.dumps(done, indent=1))
    if done:
        summary(done)
    print(f"bench wall time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
