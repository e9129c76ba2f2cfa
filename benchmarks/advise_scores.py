"""``bench_advise.py``'s scoring: each measured layout against its prediction (uncalibrated, after
one and two trials, and scaled by the load probed beside it), the per-scenario table and the
suite's summary."""

from __future__ import annotations

import math
import statistics
from typing import Any


def ci95(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of a 95 % interval (t, small n); 0 with one run."""
    if len(xs) < 2:
        return xs[0], 0.0
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78}.get(len(xs), 2.0)
    return statistics.mean(xs), t * statistics.stdev(xs) / math.sqrt(len(xs))


def median_ci(xs: list[float]) -> float:
    """Half-width of a distribution-free 95 % interval of the median of ``xs`` (order
    statistics n/2 ± 0.98 √n); 0 with fewer than 6."""
    n = len(xs)
    if n < 6:
        return 0.0
    s = sorted(xs)
    lo = max(0, math.floor(n / 2 - 0.98 * math.sqrt(n)))
    hi = min(n - 1, math.ceil(n / 2 + 0.98 * math.sqrt(n)))
    return (s[hi] - s[lo]) / 2


def _after(row: dict[str, Any]) -> dict[str, Any]:
    """The row as if the load probe had been timed only after the steps (the old way)."""
    measured = {k: v for k, v in row["measured"].items() if k != "plain_during_s"}
    return {**row, "measured": measured}


def score(
    rows: list[Any], trial: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each measured row (best predicted first) scored; and the fits of the trials. ``trial``:
    the calibration trial's corrections (``--calibrate``, its own runs), scored on the layouts
    it did not run, beside the same layouts' corrections fitted from the rounds' runs."""
    from jupyter_distributed.advise.calibrate import apply, fit

    as_json = [r.to_json() for r in rows]
    ran = set(trial["trial"]["layouts"]) if trial else set()
    fits = {
        "fit_top1": fit(as_json[:1]),  # the old "one trial": the top layout
        "fit_top2": fit(as_json[:2]),  # what --verify 2 fits
        "fit_top1_after": fit([_after(x) for x in as_json[:1]]),
        "fit_trial": trial,
        # the trial's layouts as the rounds measured them (the same minutes as the others)
        "fit_trial_rounds": fit([x for x in as_json if x["layout"] in ran], per_kind_rows=1)
        if ran
        else None,
    }

    def err(r: Any, cal: dict[str, Any] | None) -> float | None:
        if cal is None:
            return None
        return sum(apply(r.parts_s, r.candidate.kind, cal).values()) / r.measured["step_s"] - 1

    out = []
    for i, (r, j) in enumerate(zip(rows, as_json, strict=True)):
        mean, half = ci95(r.measured["step_s_runs"])
        out.append({
            "layout": r.candidate.name, "rank": i + 1, "predicted_s": r.step_s,
            "measured_s": r.measured["step_s"], "ci_s": half, "mean_s": mean,
            "ci_steps_s": median_ci(r.measured.get("step_s_steps") or []),
            "steps": len(r.measured.get("step_s_steps") or []),
            "error": r.step_s / r.measured["step_s"] - 1,
            "calibrated_error": err(r, fits["fit_top2"]) if i >= 2 else None,
            "calibrated1_error": err(r, fits["fit_top1"]) if i >= 1 else None,
            "calibrated1_after_error": err(r, fits["fit_top1_after"]) if i >= 1 else None,
            "trial_error": err(r, trial) if r.candidate.name not in ran else None,
            "trial_rounds_error": err(r, fits["fit_trial_rounds"])
            if r.candidate.name not in ran
            else None,
            # the load probed beside this layout (its ranks' plain block): between its steps,
            # and after them
            "probed_error": err(r, fit([j])),
            "probed_after_error": err(r, fit([_after(j)])),
            "parts_ms": {k: round(1e3 * v, 3) for k, v in r.parts_s.items()},
            "plain_ms": [round(1e3 * r.measured.get(k, 0.0), 3)
                         for k in ("plain_predicted_s", "plain_s", "plain_during_s")],
            "predicted_gib": r.memory.total / 2**30, "measured_gib": r.measured["gib"],
            "memory_error": r.measured["memory_error"], "dominant": r.dominant,
        })  # fmt: skip
    return out, fits


def _pct(x: float | None, digits: int = 0) -> str:
    return "" if x is None else f"{x:+.{digits}%}"


def show(s: dict[str, Any]) -> None:
    w = s["wall_s"]
    print(f"\n{s['model']} × {s['ranks']} ranks{s['where']}, global batch {s['global_batch']} "
          f"(answer {s['answer_s']:.1f} s): top pick within 5 % of best: {s['top_within_5']}, "
          f"best in top 3: {s['best_in_top3']}; load {s['load'][0]} → {s['load'][1]}; wall: "
          f"probe {w['probe']:.0f} s, advise {w['advise']:.0f} s, trial {w.get('trial', 0):.0f} "
          f"s, measure {w['measure']:.0f} s ({s['rounds']} round(s))")  # fmt: skip
    t = (s.get("trial") or {}).get("trial")
    if t:
        print(f"  calibration trial: {len(t['layouts'])} layouts in {t['seconds']:.1f} s: "
              f"{', '.join(t['layouts'])}" + (f"; left out: {', '.join(t['kinds_left_out'])}"
                                              if t["kinds_left_out"] else ""))  # fmt: skip
    for link, g in s.get("links", {}).items():
        print(f"  probe {link}: {g['pairs']} pairs, latency {g['latency_us']:.0f} µs, bandwidth "
              f"{g['bandwidth_gbs']:.3f} GB/s (min {g['min_bandwidth_gbs']:.3f})")  # fmt: skip
    for name, why in s.get("failed", {}).items():
        print(f"  FAILED, not scored: {name}: {why}")
    print(f"  {'#':>2} {'layout':<22} {'pred ms':>8} {'meas ms':>8} {'±95%':>6} {'±med':>6} "
          f"{'err':>6} "
          f"{'cal err':>7} {'cal1':>6} {'trial':>6} {'tr-rnd':>6} {'probed':>6} {'after':>6} "
          f"{'pred MiB':>8} "
          f"{'meas MiB':>8} {'mem err':>7}")  # fmt: skip
    for x in s["layouts"]:
        print(f"  {x['rank']:>2} {x['layout']:<22} {1e3 * x['predicted_s']:>8.2f} "
              f"{1e3 * x['measured_s']:>8.2f} {1e3 * x['ci_s']:>6.2f} "
              f"{1e3 * x.get('ci_steps_s', 0.0):>6.2f} {x['error']:>+6.0%} "
              f"{_pct(x['calibrated_error']):>7} {_pct(x.get('calibrated1_error')):>6} "
              f"{_pct(x.get('trial_error')):>6} {_pct(x.get('trial_rounds_error')):>6} "
              f"{_pct(x.get('probed_error')):>6} {_pct(x.get('probed_after_error')):>6} "
              f"{1024 * x['predicted_gib']:>8.2f} {1024 * x['measured_gib']:>8.2f} "
              f"{x['memory_error']:>+7.1%}")  # fmt: skip


def _line(label: str, xs: list[float]) -> None:
    if xs:
        print(f"{label}: median {statistics.median(xs):.1%}, worst {max(xs):.1%} ({len(xs)} rows)")


def summary(done: list[dict[str, Any]]) -> None:
    rows = [x for s in done for x in s["layouts"]]

    def absolute(key: str) -> list[float]:
        return [abs(x[key]) for x in rows if x.get(key) is not None]

    mem = [x["memory_error"] for x in rows]
    print(f"\n{len(done)} scenarios, {len(rows)} layouts measured")
    _line("step time, uncalibrated: |error|", absolute("error"))
    _line("step time, calibrated on each scenario's top 2 (held-out layouts)",
          absolute("calibrated_error"))  # fmt: skip
    _line("step time, calibrated on each scenario's top 1 (one trial; held-out layouts)",
          absolute("calibrated1_error"))  # fmt: skip
    _line("  the same trial, its load probe timed after its steps (the old way)",
          absolute("calibrated1_after_error"))  # fmt: skip
    _line("step time, after the calibration trial (--calibrate, its own runs; held-out layouts)",
          absolute("trial_error"))  # fmt: skip
    _line("  the trial's layouts as the rounds measured them (held-out layouts)",
          absolute("trial_rounds_error"))  # fmt: skip
    held = [x for x in rows if x.get("trial_error") is not None]
    _line(
        "  the old one trial (top layout) on the same held-out layouts",
        [abs(x["calibrated1_error"]) for x in held if x.get("calibrated1_error") is not None],
    )
    _line("  uncalibrated on the same held-out layouts", [abs(x["error"]) for x in held])
    trials = [s["trial"]["trial"]["seconds"] for s in done if s.get("trial")]
    if trials:
        print(f"calibration trial wall time: median {statistics.median(trials):.1f} s, "
              f"max {max(trials):.1f} s ({len(trials)} scenarios)")  # fmt: skip
    _line("step time, each layout scaled by its own ranks' share of the cores, probed between "
          "its steps", absolute("probed_error"))  # fmt: skip
    _line("  the same, probed after its steps (the old way)", absolute("probed_after_error"))
    spread = [x["ci_s"] / x["measured_s"] for x in rows if x["measured_s"] > 0]
    pooled = [x["ci_steps_s"] / x["measured_s"] for x in rows if x.get("ci_steps_s")]
    if spread:
        print(f"the measured step's 95 % interval, median over the layouts: "
              f"±{statistics.median(spread):.1%} over the runs' medians"
              + (f", ±{statistics.median(pooled):.1%} of the pooled "
              f"steps' median ({statistics.median(x.get('steps', 0) for x in rows):.0f} steps)"
              if pooled else ""))  # fmt: skip
    loads = [x for s in done for x in s["load"]]
    print(f"load average (1 min) at the scenarios' starts and ends: {min(loads)}–{max(loads)}")
    print(f"memory: within ±5 % for {sum(abs(m) <= 0.05 for m in mem)} of {len(mem)} layouts; "
          f"worst under-prediction {min(mem):+.1%}, worst over {max(mem):+.1%}")  # fmt: skip
    print(f"ranking: top pick within 5 % of best (or tied) in "
          f"{sum(s['top_within_5'] for s in done)} of {len(done)}; best in top 3 in "
          f"{sum(s['best_in_top3'] for s in done)} of {len(done)}; answer time median "
          f"{statistics.median(s['answer_s'] for s in done):.1f} s")  # fmt: skip
    walls = {k: sum(s["wall_s"].get(k, 0.0) for s in done)
             for k in ("probe", "advise", "trial", "measure")}  # fmt: skip
    print("wall time in all: " + ", ".join(f"{k} {v:.0f} s" for k, v in walls.items()))
