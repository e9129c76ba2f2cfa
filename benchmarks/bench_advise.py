"""``%distributed advise`` against measurement: a fixed suite of scenarios (models × ranks ×
global batch) on local CPU ranks over gloo, every launchable layout of each run for real.

Run: ``python benchmarks/bench_advise.py [--quick] [--repeats R] [--json out.json]``.

Per scenario: a ``--quick`` probe of the ranks, ``advise()`` (uncalibrated), then every layout
it lists that fits, measured through its own launch line (``verify``: peak live tensor bytes and
the median of 10 timed steps per run, ``R`` runs). It prints, per layout, predicted against
measured step time (with a 95 % interval over the runs) and memory; per scenario, whether the
top pick is within 5 % of the best measured (or tied with it: intervals overlap) and whether the
best is in the top 3; and the calibrated error: corrections fitted on the top layout (one
trial) and on the top 2 (what ``--verify 2`` does), applied to the others; and each layout
scaled by its own ranks' share of the cores (the plain block timed on its ranks beside its step:
a load probe beside every layout, so a spike scales only the row it hit); the load average at
each scenario's start and end. The runs are interleaved: one round over every layout, then the
next, so the trial and the layouts it is applied to are measured in the same minutes. Then
the median and worst errors of the suite. ``--json`` keeps each layout's predicted parts and
the ranks' and the advisor's time of the plain block.

Fixed before measuring: 5 models × 2 ranks × 2 global batches = 20 scenarios (``--quick``:
the first 4). All on this machine; no published replays here (see RESULTS.md).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_shell, use_checkout

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
SCENARIOS = [(m, n, b) for m in SEQ for n in (2, 4) for b in (8, 16)]


def ci95(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of a 95 % interval (t, small n); 0 with one run."""
    if len(xs) < 2:
        return xs[0], 0.0
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78}.get(len(xs), 2.0)
    return statistics.mean(xs), t * statistics.stdev(xs) / math.sqrt(len(xs))


def scenario(ip: Any, model: str, n: int, batch: int, repeats: int) -> dict[str, Any]:
    from jupyter_distributed.advise import advise
    from jupyter_distributed.advise.calibrate import apply, fit
    from jupyter_distributed.advise.store import newest_probe

    session = ip.user_ns["_jd_bench_session"]
    LOG.seek(0)
    LOG.truncate()
    load_before = os.getloadavg()[0]
    with contextlib.redirect_stdout(LOG), contextlib.redirect_stderr(LOG):
        ip.run_line_magic("distributed", f"probe --quick -n {n}")
        probe = newest_probe(session.store, n, None)
        began = time.perf_counter()
        advice = advise(ip.user_ns[model], global_batch=batch, seq=SEQ[model],
                        procs_per_node=n, probe=probe)  # fmt: skip
        answer_s = time.perf_counter() - began
        interleaved(advice, ip, model, repeats)
    rows = [r for r in advice.layouts if r.measured]
    fitted = fit([r.to_json() for r in rows[:2]])
    one = fit([r.to_json() for r in rows[:1]])  # one calibration trial: the top layout
    out = []
    for i, r in enumerate(rows):
        assert r.measured is not None
        mean, half = ci95(r.measured["step_s_runs"])
        cal = sum(apply(r.parts_s, r.candidate.strategy, fitted).values()) if fitted else None
        cal1 = sum(apply(r.parts_s, r.candidate.strategy, one).values()) if one else None
        own = fit([r.to_json()])  # the load probed beside this layout: its ranks' plain block
        probed = sum(apply(r.parts_s, r.candidate.strategy, own).values()) if own else None
        out.append({
            "layout": r.candidate.name, "rank": i + 1, "predicted_s": r.step_s,
            "measured_s": r.measured["step_s"], "ci_s": half, "mean_s": mean,
            "error": r.step_s / r.measured["step_s"] - 1,
            "calibrated_error": None if cal is None or i < 2 else cal / r.measured["step_s"] - 1,
            "calibrated1_error": None if cal1 is None or i < 1
            else cal1 / r.measured["step_s"] - 1,
            "probed_error": None if probed is None else probed / r.measured["step_s"] - 1,
            "parts_ms": {k: round(1e3 * v, 3) for k, v in r.parts_s.items()},
            "plain_ms": [round(1e3 * r.measured.get(k, 0.0), 3)
                         for k in ("plain_predicted_s", "plain_s")],
            "predicted_gib": r.memory.total / 2**30, "measured_gib": r.measured["gib"],
            "memory_error": r.measured["memory_error"], "dominant": r.dominant,
        })  # fmt: skip
    best = min(out, key=lambda x: x["measured_s"])
    top = out[0]
    tie = top["measured_s"] - top["ci_s"] <= best["measured_s"] + best["ci_s"]
    return {
        "model": model, "ranks": n, "global_batch": batch, "answer_s": answer_s,
        "load": [round(x, 1) for x in (load_before, os.getloadavg()[0])],
        "fit_top1": one, "fit_top2": fitted,
        "layouts": out, "top_within_5": top["measured_s"] <= 1.05 * best["measured_s"] or tie,
        "best_in_top3": best["rank"] <= 3,
    }  # fmt: skip


def interleaved(advice: Any, ip: Any, model: str, repeats: int) -> None:
    """Measure every layout ``repeats`` times, one round over all of them after another, so
    that the trial (the top layout) and the layouts its correction is applied to are measured
    in the same minutes, not one layout's runs before the next one's; each row then holds the
    median of its runs (step, and the ranks' plain block beside it)."""
    import dataclasses

    from jupyter_distributed.advise.verify import verify

    runs: dict[int, list[dict[str, Any]]] = {}
    for _ in range(repeats):
        verify(advice, len(advice.layouts), ip, model, None, "adamw", 1)
        for i, r in enumerate(advice.layouts):
            if r.measured:
                runs.setdefault(i, []).append(dict(r.measured))
    for i, got in runs.items():
        row = advice.layouts[i]
        merged = dict(got[-1])
        merged["step_s_runs"] = [g["step_s"] for g in got]
        merged["step_s"] = statistics.median(merged["step_s_runs"])
        merged["plain_s"] = statistics.median(g["plain_s"] for g in got)
        merged["gib"] = max(g["gib"] for g in got)
        merged["memory_error"] = row.memory.total / (merged["gib"] * 2**30) - 1
        merged["time_error"] = row.step_s / merged["step_s"] - 1
        merged["samples_per_s"] = advice.inputs["global_batch"] / merged["step_s"]
        advice.layouts[i] = dataclasses.replace(row, measured=merged)


def show(s: dict[str, Any]) -> None:
    print(f"\n{s['model']} × {s['ranks']} ranks, global batch {s['global_batch']} "
          f"(answer {s['answer_s']:.1f} s): top pick within 5 % of best: {s['top_within_5']}, "
          f"best in top 3: {s['best_in_top3']}; load {s['load'][0]} → {s['load'][1]}")  # fmt: skip
    print(f"  {'#':>2} {'layout':<22} {'pred ms':>8} {'meas ms':>8} {'±95%':>6} {'err':>6} "
          f"{'cal err':>7} {'cal1':>6} {'probed':>6} {'pred MiB':>8} {'meas MiB':>8} "
          f"{'mem err':>7}")  # fmt: skip
    for x in s["layouts"]:
        cal = "" if x["calibrated_error"] is None else f"{x['calibrated_error']:+.0%}"
        one = x.get("calibrated1_error")
        cal1 = "" if one is None else f"{one:+.0%}"
        own = x.get("probed_error")
        probed = "" if own is None else f"{own:+.0%}"
        print(f"  {x['rank']:>2} {x['layout']:<22} {1e3 * x['predicted_s']:>8.2f} "
              f"{1e3 * x['measured_s']:>8.2f} {1e3 * x['ci_s']:>6.2f} {x['error']:>+6.0%} "
              f"{cal:>7} {cal1:>6} {probed:>6} {1024 * x['predicted_gib']:>8.2f} "
              f"{1024 * x['measured_gib']:>8.2f} {x['memory_error']:>+7.1%}")  # fmt: skip


def summary(done: list[dict[str, Any]]) -> None:
    rows = [x for s in done for x in s["layouts"]]
    err = [abs(x["error"]) for x in rows]
    cal = [abs(x["calibrated_error"]) for x in rows if x["calibrated_error"] is not None]
    cal1 = [abs(x["calibrated1_error"]) for x in rows if x.get("calibrated1_error") is not None]
    probed = [abs(x["probed_error"]) for x in rows if x.get("probed_error") is not None]
    mem = [x["memory_error"] for x in rows]
    print(f"\n{len(done)} scenarios, {len(rows)} layouts measured")
    print(f"step time, uncalibrated: median |error| {statistics.median(err):.1%}, "
          f"worst {max(err):.1%}")  # fmt: skip
    if cal:
        print(f"step time, calibrated on each scenario's top 2 (held-out layouts): median "
              f"{statistics.median(cal):.1%}, worst {max(cal):.1%}")  # fmt: skip
    if cal1:
        print(f"step time, calibrated on each scenario's top 1 (one trial; held-out layouts): "
              f"median {statistics.median(cal1):.1%}, worst {max(cal1):.1%}")  # fmt: skip
    if probed:
        print(f"step time, each layout scaled by its own ranks' share of the cores (the load "
              f"probed beside it): median {statistics.median(probed):.1%}, "
              f"worst {max(probed):.1%}")  # fmt: skip
    loads = [x for s in done for x in s["load"]]
    print(f"load average (1 min) at the scenarios' starts and ends: {min(loads)}–{max(loads)}")
    print(f"memory: within ±5 % for {sum(abs(m) <= 0.05 for m in mem)} of {len(mem)} layouts; "
          f"worst under-prediction {min(mem):+.1%}, worst over {max(mem):+.1%}")  # fmt: skip
    print(f"ranking: top pick within 5 % of best (or tied) in "
          f"{sum(s['top_within_5'] for s in done)} of {len(done)}; best in top 3 in "
          f"{sum(s['best_in_top3'] for s in done)} of {len(done)}; answer time median "
          f"{statistics.median(s['answer_s'] for s in done):.1f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 4 scenarios")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", help="scenarios as model:ranks:batch, comma-separated")
    args = parser.parse_args()
    use_checkout(always=True)
    ip, _tmp = bench_shell("bench-advise-")
    from jupyter_distributed.magics import DistributedMagics

    magics = next(m for m in ip.magics_manager.registry.values()
                  if isinstance(m, DistributedMagics))  # fmt: skip
    ip.user_ns["_jd_bench_session"] = magics.session
    ip.run_cell(MODELS)
    done = []
    try:
        chosen = SCENARIOS[:4] if args.quick else SCENARIOS
        if args.only:
            want = set(args.only.split(","))
            chosen = [x for x in SCENARIOS if ":".join(map(str, x)) in want]
        for model, n, batch in chosen:
            try:
                s = scenario(ip, model, n, batch, args.repeats)
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
    finally:
        magics.session.shutdown()
    if done:
        summary(done)


if __name__ == "__main__":
    main()
