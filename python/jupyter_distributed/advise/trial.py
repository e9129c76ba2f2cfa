"""The calibration trial (``%distributed advise --calibrate``): at most 60 s of real runs on
the cluster, chosen so that their corrections carry to the layouts it does not run.

``--verify K`` runs the top K layouts, which are often of one kind (the top 2 of a small model
on 2 ranks: two pipelines); the corrections they fit then know nothing of the kinds they did not
run (DDP's bucket all-reduce after the step's own work, FSDP's gathers and the sharded
optimizer, a GPipe schedule against a 1F1B one). The trial instead runs, through their own
launch lines as ``--verify`` does (:func:`.verify.measure_row`), the best-ranked layout of each
kind in the ranking (:attr:`.enumerate.Candidate.kind`: ddp, fsdp, a 1F1B and a GPipe pipeline,
and a pipeline of one microbatch, whose stages never run at once: the best GPipe had been that
one in most scenarios, and its factor, +5 … +17 % over-predicted where the pipelined ones were
20–40 % short, carried to every GPipe layout), then, while the budget lasts, a second layout of
each pipeline kind, the one whose microbatch count is farthest from the first's (a pipeline's
cost per slot is what moves with it). From those rows :func:`.calibrate.fit` takes the ranks'
measured share of the cores (compute, bubble, optimizer, framework), communication (its own
least-squares factor from 3 rows on) and one factor per kind measured, so each kind's layouts
are scaled by what a layout of their own kind measured.

The budget: no layout is started once the time spent plus the slowest launch so far would
pass it (the first always runs). A kind left out for the budget gets no factor of its own,
and the stored trial names it.
"""

from __future__ import annotations

import time
from typing import Any

from .calibrate import fit
from .intake import AdviseError
from .report import Advice
from .verify import measure_row

BUDGET_S = 60.0
clock = time.perf_counter  # (the tests' stand-in clock replaces it)


def choose(advice: Advice) -> list[int]:
    """The trial's layouts in the order they run: the best-ranked of each kind that fits,
    then for each pipeline kind the one whose microbatch count is farthest (in ratio) from that
    first one's."""
    first: dict[str, int] = {}
    for i, row in enumerate(advice.layouts):
        if row.fits:
            first.setdefault(row.candidate.kind, i)
    order = sorted(first.values())
    for kind, i in first.items():
        if not kind.startswith("model-parallel"):
            continue
        m = advice.layouts[i].candidate.microbatches
        others = [
            j
            for j, r in enumerate(advice.layouts)
            if r.fits and r.candidate.kind == kind and r.candidate.microbatches != m
        ]
        if others:
            far = max(others, key=lambda j: _spread(advice.layouts[j].candidate.microbatches, m))
            order.append(far)
    return order


def _spread(a: int, b: int) -> float:
    return max(a, b) / min(a, b)


def trial(
    advice: Advice,
    shell: Any,
    model: str,
    step: str | None,
    optimizer: str,
    budget_s: float = BUDGET_S,
) -> dict[str, Any]:
    """Run the trial's layouts of ``advice`` (their measured values go into its rows) within
    ``budget_s``; the corrections they fit, with what the trial ran (``trial``), also kept in
    ``advice.calibration``."""
    if shell is None:
        raise AdviseError("--calibrate runs cells, so it needs the notebook's shell (line magic)")
    began = clock()
    ran: list[int] = []
    slowest = 0.0
    for i in choose(advice):
        spent = clock() - began
        if ran and spent + slowest > budget_s:
            break
        start = clock()
        measure_row(advice, i, shell, model, step, optimizer, flag="--calibrate")
        slowest = max(slowest, clock() - start)
        ran.append(i)
    seconds = clock() - began
    fitted = fit([advice.layouts[i].to_json() for i in ran], per_kind_rows=1)
    if fitted is None:
        raise AdviseError("--calibrate: no layout was measured")
    kinds = {r.candidate.kind for r in advice.layouts if r.fits}
    fitted["trial"] = {
        "layouts": [advice.layouts[i].candidate.name for i in ran],
        "seconds": round(seconds, 2),
        "budget_s": budget_s,
        "kinds_left_out": sorted(kinds - {advice.layouts[i].candidate.kind for i in ran}),
    }
    advice.calibration = fitted
    return fitted


def said(fitted: dict[str, Any]) -> str:
    """One line on what the trial ran and how long it took."""
    t = fitted["trial"]
    left = t["kinds_left_out"]
    return (
        f"calibration trial: {len(t['layouts'])} layouts in {t['seconds']:.1f} s (budget "
        f"{t['budget_s']:.0f} s): {', '.join(t['layouts'])}"
        + (f"; not run for the budget, no factor of their own: {', '.join(left)}" if left else "")
    )
