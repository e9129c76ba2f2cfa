"""``--verify K``: run the top K layouts, each as its own cluster through its own launch line
(the line as shown), with the user's model and step; measure peak live tensor bytes and step
time on every rank and set them beside the prediction.

A prediction off by more than 15 % names the component to blame: the largest predicted part
of what was off (memory: its largest component; time: compute, communication or bubble). That
is a pointer for where to look, not a fit (per-cluster corrections are not learned yet).
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from .intake import AdviseError
from .report import Advice

OFF = 0.15
STEPS = 10  # timed steps per layout (after the profiled ones), their median kept
PULLED = "_jd_advise_measured"


def cell(model: str, step: str | None, micro: int, seq: int | None, m: int, opt: str) -> str:
    return (
        "# %distributed advise --verify: measure this layout\n"
        "from jupyter_distributed.worker.measure import measure as _jd_measure\n"
        f"{PULLED} = _jd_measure(globals(), {model}, micro={micro}, seq={seq!r}, "
        f"microbatches={m}, optimizer={opt!r}, step={step or 'None'}, steps={STEPS})\n"
        "del _jd_measure\n"
    )


def verify(
    advice: Advice, k: int, shell: Any, model: str, step: str | None, optimizer: str
) -> None:
    """Run the top ``k`` layouts that fit; their measured values go into ``advice``'s rows."""
    if shell is None:
        raise AdviseError("--verify runs cells, so it needs the notebook's shell (the line magic)")
    push = ",".join(n for n in (model, step) if n)
    chosen = [i for i, r in enumerate(advice.layouts) if r.fits][:k]
    for i in chosen:
        row = advice.layouts[i]
        c = row.candidate
        line = f"{row.launch} --push {push} --pull {PULLED} --quiet"
        code = cell(model, step, row.micro, advice.inputs["seq"], c.microbatches, optimizer)
        result = shell.run_cell(f"{line}\n{code}")
        got = shell.user_ns.pop(PULLED, None)
        if result.error_in_exec is not None or not got:
            raise AdviseError(f"--verify: {shlex.join(line.split()[:6])} … failed; see above")
        peak = max(g["peak_bytes"] for g in got)
        seconds = max(g["step_seconds"] for g in got)
        measured = {
            "gib": peak / 2**30,
            "step_s": seconds,
            "samples_per_s": advice.inputs["global_batch"] / seconds,
            "memory_error": row.memory.total / peak - 1,
            "time_error": row.step_s / seconds - 1,
        }
        measured["blame"] = blame(row, measured)
        advice.layouts[i] = dataclasses.replace(row, measured=measured)


def blame(row: Any, measured: dict[str, Any]) -> str:
    said = []
    if abs(measured["memory_error"]) > OFF:
        parts = row.memory.breakdown()
        worst = max(parts, key=lambda key: parts[key])
        said.append(f"memory {measured['memory_error']:+.0%} (largest predicted part: {worst})")
    if abs(measured["time_error"]) > OFF:
        worst = max(row.parts_s, key=lambda key: row.parts_s[key])
        said.append(f"step time {measured['time_error']:+.0%} (largest predicted part: {worst})")
    return "; ".join(said)
