"""The calibration trial re-scored offline on stored ``bench_advise.py --json`` runs, with the
package on the path (this checkout's, or another's through ``PYTHONPATH``: an A/B of the trial's
choice and fit without new runs).

Run: ``PYTHONPATH=python python benchmarks/bench_advise_rescore.py RUN.json [RUN.json ...]``.

Per scenario: the layouts the trial would run (:func:`.trial.choose` on the stored ranking, every
layout fitting), their corrections fitted (:func:`.calibrate.fit`, one row a kind, as the trial
fits) from the rounds' measured rows of those layouts (the same minutes as the rows scored), and
each held-out layout's corrected prediction against its measured step. The uncalibrated error
is the stored one (the cost model is not re-run). Prints each run's median |error| (worst),
held out, and the worst rows with their predicted parts.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any

NAME = re.compile(r"dp(\d+)×pp(\d+) m=(\d+) (GPipe|1F1B)")


def candidate(name: str) -> Any:
    from jupyter_distributed.advise.enumerate import Candidate

    got = NAME.fullmatch(name)
    if got:
        dp, pp, m, schedule = got.groups()
        return Candidate("model-parallel", int(dp), int(pp), int(m), schedule == "1F1B")
    strategy, dp = name.split(" dp")
    return Candidate(strategy, int(dp))


def row_json(x: dict[str, Any], c: Any) -> dict[str, Any]:
    """A stored layout as :meth:`.plan.Row.to_json` writes what :func:`.calibrate.fit` reads."""
    plain_predicted, plain_after, plain_during = (v / 1e3 for v in x["plain_ms"])
    return {
        "layout": x["layout"],
        "strategy": c.strategy,
        "kind": c.kind,
        "microbatches": c.microbatches,
        "predicted_parts_s": {k: v / 1e3 for k, v in x["parts_ms"].items()},
        "predicted_bytes": {"total": int(x["predicted_gib"] * 2**30)},
        "measured": {
            "step_s": x["measured_s"],
            "gib": x["measured_gib"],
            "plain_predicted_s": plain_predicted,
            "plain_s": plain_after,
            "plain_during_s": plain_during,
        },
    }


def rescore(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    from jupyter_distributed.advise.calibrate import apply, fit
    from jupyter_distributed.advise.trial import choose

    layouts = [x for x in scenario["layouts"] if x.get("parts_ms")]
    cands = [candidate(x["layout"]) for x in layouts]
    advice = SimpleNamespace(layouts=[SimpleNamespace(fits=True, candidate=c) for c in cands])
    ran = set(choose(advice))  # type: ignore[arg-type]
    rows = [row_json(x, c) for x, c in zip(layouts, cands, strict=True)]
    cal = fit([rows[i] for i in sorted(ran)], per_kind_rows=1)
    out = []
    for i, (x, c) in enumerate(zip(layouts, cands, strict=True)):
        if i in ran or cal is None:
            continue
        parts = {k: v / 1e3 for k, v in x["parts_ms"].items()}
        step = sum(apply(parts, c.kind, cal).values())
        out.append({
            "model": scenario["model"], "layout": x["layout"], "kind": c.kind,
            "error": step / x["measured_s"] - 1, "uncalibrated": x["error"],
            "parts_ms": x["parts_ms"], "measured_ms": 1e3 * x["measured_s"],
        })  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--worst", type=int, default=3, help="worst held-out rows shown a run")
    parser.add_argument("--save", type=Path, help="write the held-out rows (to compare arms)")
    parser.add_argument("--rows-of", type=Path, help="score only the rows another arm saved")
    args = parser.parse_args()
    pooled: list[float] = []
    saved: dict[str, list[list[str]]] = {}
    keep = json.loads(args.rows_of.read_text()) if args.rows_of else None
    for path in args.runs:
        held = [r for s in json.loads(path.read_text()) for r in rescore(s)]
        saved[str(path)] = [[r["model"], r["layout"]] for r in held]
        if keep is not None:
            held = [r for r in held if [r["model"], r["layout"]] in keep.get(str(path), [])]
        errs = [abs(r["error"]) for r in held]
        pooled += errs
        if not errs:
            print(f"{path.name}: no held-out rows")
            continue
        print(f"{path.name}: after the trial, held out: median {statistics.median(errs):.1%} "
              f"(worst {max(errs):.1%}) [{len(errs)}]; the same rows uncalibrated: median "
              f"{statistics.median(abs(r['uncalibrated']) for r in held):.1%}")  # fmt: skip
        for r in sorted(held, key=lambda r: -abs(r["error"]))[: args.worst]:
            print(f"    {r['model']:<5} {r['layout']:<20} {r['error']:+6.1%} (uncalibrated "
                  f"{r['uncalibrated']:+6.1%}; measured {r['measured_ms']:.2f} ms; predicted "
                  f"parts {r['parts_ms']})")  # fmt: skip
    if args.save:
        args.save.write_text(json.dumps(saved))
    if pooled:
        print(f"all runs: median {statistics.median(pooled):.1%} (worst {max(pooled):.1%}) "
              f"[{len(pooled)} held-out rows]")  # fmt: skip


if __name__ == "__main__":
    main()
