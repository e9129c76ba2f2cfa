"""``--verify K``: run the top K layouts, each as its own cluster through its own launch line
(the line as shown), with the user's model and step; measure peak live tensor bytes and step
time on every rank and set them beside the prediction.

The measured layouts then fit per-cluster corrections (:mod:`.calibrate`), which the command
keeps with the advice for the next ``advise`` of that cluster. A prediction off by more than
15 % names the component to blame: memory's largest component; for time, the part whose fitted
correction moves that layout's step the most.
"""

from __future__ import annotations

import dataclasses
import shlex
import statistics
from typing import Any

from .calibrate import fit
from .intake import AdviseError
from .report import Advice
from .timing import rank_threads, stage_compute

OFF = 0.15
STEPS = 10  # timed steps per layout (after the profiled ones), their median kept
PULLED = "_jd_advise_measured"


def cell(
    model: str, step: str | None, micro: int, seq: int | None, m: int, opt: str, steps: int = STEPS
) -> str:
    return (
        "# %distributed advise --verify: measure this layout\n"
        "from jupyter_distributed.worker.measure import measure as _jd_measure\n"
        "from jupyter_distributed.worker.measure import plain_block as _jd_block\n"
        f"_jd_plain = _jd_block({model}, {micro}, {seq!r})\n"
        f"{PULLED} = _jd_measure(globals(), {model}, micro={micro}, seq={seq!r}, "
        f"microbatches={m}, optimizer={opt!r}, step={step or 'None'}, steps={steps}, "
        "probe=_jd_plain)\n" + PLAIN.format(pulled=PULLED)
    )


# The plain model's forward+backward at the layout's microbatch, timed on every rank at once
# (the same cores, threads and neighbours as the step): what compute really costs there,
# against what the advisor timed alone (calibration's compute factor). Timed twice: between
# the steps (``measure``'s probe: its median is ``probe_seconds``, the load during the steps)
# and after them (``plain_s``, how it was first done: a load change during the steps is missed).
PLAIN = """\
def _jd_after(once, runs={runs}):
    import statistics, time
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        once()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)
{pulled}["plain_s"] = _jd_after(_jd_plain)
del _jd_after, _jd_plain, _jd_measure, _jd_block
""".replace("{runs}", str(STEPS))


def verify(
    advice: Advice,
    k: int,
    shell: Any,
    model: str,
    step: str | None,
    optimizer: str,
    repeats: int = 1,
    prior: list[dict[str, Any]] | None = None,
    steps: int = STEPS,
) -> dict[str, Any] | None:
    """Run the top ``k`` layouts that fit (each ``repeats`` times on its cluster); their
    measured values go into ``advice``'s rows. Returns the corrections the measurements fit
    (:func:`.calibrate.fit`), with ``prior`` rows measured before (a calibration trial's) fitted
    alongside, also kept in ``advice.calibration``."""
    if shell is None:
        raise AdviseError("--verify runs cells, so it needs the notebook's shell (the line magic)")
    chosen = [i for i, r in enumerate(advice.layouts) if r.fits][:k]
    for i in chosen:
        measure_row(advice, i, shell, model, step, optimizer, repeats, steps=steps)
    rows = [*(prior or []), *(r.to_json() for r in advice.layouts)]
    fitted = fit(rows, per_kind_rows=1) if prior else fit(rows)
    for i in chosen:
        row = advice.layouts[i]
        assert row.measured is not None  # noqa: S101 (measured just above)
        row.measured["blame"] = blame(row, row.measured, fitted)
    advice.calibration = fitted
    return fitted


def measure_row(
    advice: Advice,
    i: int,
    shell: Any,
    model: str,
    step: str | None,
    optimizer: str,
    repeats: int = 1,
    flag: str = "--verify",
    steps: int = STEPS,
) -> dict[str, Any]:
    """Run layout ``i`` of ``advice`` through its own launch line ``repeats`` times, and put
    what its ranks measured into its row (``measured``); returns that. A failed run is an
    :class:`.AdviseError` that names ``flag`` and the launch line."""
    row = advice.layouts[i]
    c = row.candidate
    push = ",".join(n for n in (model, step) if n)
    line = f"{row.launch} --push {push} --pull {PULLED} --quiet"
    code = cell(model, step, row.micro, advice.inputs["seq"], c.microbatches, optimizer, steps)
    runs = []
    for _ in range(repeats):
        result = shell.run_cell(f"{line}\n{code}")
        got = shell.user_ns.pop(PULLED, None)
        if result.error_in_exec is not None or not got:
            raise AdviseError(f"{flag}: {shlex.join(line.split()[:6])} … failed; see above")
        runs.append(got)
    peak = max(g["peak_bytes"] for g in runs[0])
    times = [max(g["step_seconds"] for g in got) for got in runs]
    # each timed step's time (its slowest rank's), every run's: ranks meet between the steps
    each = [
        max(per)
        for got in runs
        for per in zip(*(g.get("step_seconds_all", ()) for g in got), strict=False)
    ]
    seconds = statistics.median(times)
    plain = [max(g.get("plain_s", 0.0) for g in got) for got in runs]
    during = [max(g.get("probe_seconds", 0.0) for g in got) for got in runs]
    measured = {
        "plain_s": statistics.median(plain),
        "plain_during_s": statistics.median(during),
        "plain_predicted_s": plain_predicted(shell.user_ns.get(model), advice, row.micro),
        "gib": peak / 2**30,
        "step_s": seconds,
        "step_s_runs": times,
        "step_s_steps": each,
        "samples_per_s": advice.inputs["global_batch"] / seconds,
        "memory_error": row.memory.total / peak - 1,
        "time_error": row.step_s / seconds - 1,
    }
    advice.layouts[i] = dataclasses.replace(row, measured=measured)
    return measured


def plain_predicted(factory: Any, advice: Advice, micro: int) -> float:
    """The advisor's own time for the whole model's forward+backward at ``micro`` (timed here,
    as a rank of this cluster gets threads); 0 without a factory."""
    if not callable(factory):
        return 0.0
    threads, oversub = rank_threads(int(advice.inputs["procs_per_node"]))
    timed = stage_compute(factory, 1, advice.inputs["seq"], threads, micro)
    return timed[0].fwd_bwd * oversub


def blame(row: Any, measured: dict[str, Any], fitted: dict[str, Any] | None = None) -> str:
    """What to blame for a prediction off by more than 15 %: memory's largest component; for
    time, the part whose fitted correction moves this row's step the most (without a fit, the
    largest predicted part)."""
    said = []
    if abs(measured["memory_error"]) > OFF:
        parts = row.memory.breakdown()
        worst = max(parts, key=lambda key: parts[key])
        said.append(f"memory {measured['memory_error']:+.0%} (largest predicted part: {worst})")
    if abs(measured["time_error"]) > OFF:
        parts = row.raw_parts_s or row.parts_s
        if fitted is not None:
            moved = {
                key: abs(v * (fitted["communication" if key == "communication" else "compute"] - 1))
                for key, v in parts.items()
            }
            worst = max(moved, key=lambda key: moved[key])
            said.append(f"step time {measured['time_error']:+.0%} (to blame: {worst})")
        else:
            worst = max(parts, key=lambda key: parts[key])
            said.append(
                f"step time {measured['time_error']:+.0%} (largest predicted part: {worst})"
            )
    return "; ".join(said)
