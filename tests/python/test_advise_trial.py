"""The advisor's calibration trial (``%distributed advise --calibrate``): one layout of each kind
in the ranking, within its 60 s, whose corrections carry to every kind it ran; the fit per kind,
the choice and the budget without processes, then the flag through the real magic on 2 ranks:
the trial stored with the advice and used by the next ``advise``."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from .core_helpers import shell  # noqa: F401 (a fixture)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(240)

from jupyter_distributed.advise import advise  # noqa: E402
from jupyter_distributed.advise import trial as trial_module  # noqa: E402
from jupyter_distributed.advise.calibrate import apply, fit, kind_of  # noqa: E402
from jupyter_distributed.advise.enumerate import ONE_MICRO, Candidate  # noqa: E402

from .test_advise import MODEL, PROBE, advice_runs, recorded_probe  # noqa: E402


def _row(layout: str, strategy: str, compute: float, comm: float, step: float) -> dict[str, Any]:
    return {
        "layout": layout,
        "strategy": strategy,
        "predicted_parts_s": {"compute": compute, "communication": comm},
        "predicted_bytes": {"total": 1},
        # the ranks ran the plain block at 2x the advisor's time: their share of the cores
        "measured": {"gib": 0.0, "step_s": step, "plain_s": 0.2, "plain_predicted_s": 0.1},
    }


def test_a_trial_corrects_each_kind_by_its_own_layout() -> None:
    """DDP measured 1.5x its share-scaled prediction, a GPipe pipeline 1.2x, a 1F1B one
    exactly: each trial layout's kind then predicts that layout's step exactly, so a layout of
    the same kind and mix of parts is off by what the trial measured of that kind only (on the
    old fit: one factor for every kind, a strategy's own only from 2 rows of it)."""
    rows = [
        _row("ddp dp2", "ddp", 1.0, 1.0, 1.5 * (2 * 1.0 + 2 * 1.0)),
        _row("dp1×pp2 m=4 1F1B", "model-parallel", 2.0, 0.5, 2 * 2.0 + 2 * 0.5),
        _row("dp1×pp2 m=4 GPipe", "model-parallel", 2.0, 0.5, 1.2 * (2 * 2.0 + 2 * 0.5)),
    ]
    fitted = fit(rows, per_kind_rows=1)
    assert fitted is not None
    assert fitted["compute"] == pytest.approx(2.0)  # the ranks' measured share
    kinds = {"ddp": "ddp", "1F1B": "model-parallel 1F1B", "GPipe": "model-parallel GPipe"}
    assert set(fitted["per_kind"]) == set(kinds.values())
    for r in rows:
        kind = kinds[r["layout"].split()[-1] if "pp" in r["layout"] else "ddp"]
        predicted = sum(apply(r["predicted_parts_s"], kind, fitted).values())
        assert predicted == pytest.approx(r["measured"]["step_s"])
    # another pipeline of each schedule, half the size: GPipe's 1.2 carries, to GPipe only
    half = {"compute": 1.0, "communication": 0.25}
    gpipe = sum(apply(half, "model-parallel GPipe", fitted).values())
    one_f = sum(apply(half, "model-parallel 1F1B", fitted).values())
    assert gpipe / one_f == pytest.approx(1.2)
    # a kind the trial did not run keeps the shared corrections only
    fsdp = apply(half, "fsdp", fitted)
    assert fsdp["compute"] == pytest.approx(2.0)
    assert fsdp["communication"] == pytest.approx(0.25 * fitted["communication"])


def _advice() -> Any:
    return advise(
        lambda: torch.nn.Sequential(
            torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
        ),
        global_batch=8,
        procs_per_node=2,
        probe=PROBE,
    )


def test_the_trial_runs_one_layout_of_each_kind_then_a_pipeline_of_other_microbatches() -> None:
    advice = _advice()
    chosen = [advice.layouts[i].candidate for i in trial_module.choose(advice)]
    kinds = [c.kind for c in chosen]
    assert sorted(set(kinds)) == [
        "ddp", "fsdp", "model-parallel 1F1B", "model-parallel GPipe", ONE_MICRO
    ]  # fmt: skip
    first: dict[str, Any] = {}
    for c in chosen:
        first.setdefault(c.kind, c)
    # each kind's first is its best-ranked layout
    for kind, c in first.items():
        best = next(r.candidate for r in advice.layouts if r.fits and r.candidate.kind == kind)
        assert c == best
    # then a second pipeline of each schedule, microbatches as far from the first's as there are
    for kind in ("model-parallel 1F1B", "model-parallel GPipe"):
        again = [c for c in chosen if c.kind == kind]
        assert len(again) == 2
        ms = {r.candidate.microbatches for r in advice.layouts if r.candidate.kind == kind}
        m0 = again[0].microbatches
        assert again[1].microbatches == max(ms - {m0}, key=lambda m: max(m, m0) / min(m, m0))


def test_the_trial_stops_within_its_budget_and_names_what_it_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No layout starts once the time spent and the slowest launch so far would pass the
    budget; the kinds not run are named, and get no factor of their own."""
    advice = _advice()
    clock = [0.0]
    monkeypatch.setattr(trial_module, "clock", lambda: clock[0])

    def measure_row(advice: Any, i: int, *_: Any, **__: Any) -> dict[str, Any]:
        clock[0] += 25.0  # each launch takes 25 s
        row = advice.layouts[i]
        measured = {"gib": 0.0, "step_s": 2 * row.step_s, "plain_s": 0.2,
                    "plain_predicted_s": 0.1}  # fmt: skip
        advice.layouts[i] = dataclasses.replace(row, measured=measured)
        return measured

    monkeypatch.setattr(trial_module, "measure_row", measure_row)
    fitted = trial_module.trial(advice, object(), "build", None, "adamw", budget_s=60.0)
    ran = fitted["trial"]["layouts"]
    assert len(ran) == 2 and fitted["trial"]["seconds"] == 50.0  # a third would end at 75 s
    kinds = {r.candidate.kind for r in advice.layouts if r.fits}
    assert len(fitted["trial"]["kinds_left_out"]) == len(kinds) - 2
    assert set(fitted["per_kind"]) == {
        r.candidate.kind for r in advice.layouts if r.candidate.name in ran
    }
    assert "not run for the budget" in trial_module.said(fitted)


def test_verify_after_the_trial_fits_its_layouts_with_the_trials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--calibrate --verify 1``: the verified top layout is fitted together with the trial's
    (each kind the trial ran keeps a factor of its own, from its one row)."""
    from jupyter_distributed.advise import verify as verify_module

    advice = _advice()

    def measure_row(advice: Any, i: int, *_: Any, **__: Any) -> dict[str, Any]:
        row = advice.layouts[i]
        measured = {"gib": 0.0, "step_s": 3 * row.step_s, "plain_s": 0.2, "memory_error": 0.0,
                    "plain_predicted_s": 0.1, "time_error": -2 / 3}  # fmt: skip
        advice.layouts[i] = dataclasses.replace(row, measured=measured)
        return measured

    monkeypatch.setattr(verify_module, "measure_row", measure_row)
    monkeypatch.setattr(trial_module, "measure_row", measure_row)
    trial_module.trial(advice, object(), "build", None, "adamw")
    prior = [r.to_json() for r in advice.layouts if r.measured]
    again = _advice()
    fitted = verify_module.verify(again, 1, object(), "build", None, "adamw", prior=prior)
    assert fitted is not None and fitted["layouts"] == len(prior) + 1
    assert set(fitted["per_kind"]) == {r["kind"] for r in prior}


def test_calibrate_stores_the_trial_and_the_next_advise_uses_it(shell: Any) -> None:  # noqa: F811
    shell.run_cell(MODEL)
    recorded_probe(shell)
    line = "advise --model build --global-batch 8 --seq 16 -n 2"
    shell.run_line_magic("distributed", f"{line} --calibrate")
    store = shell.user_ns["_jd_session"].store
    first, again = sorted(advice_runs(shell), key=lambda r: r.started)
    summary = store.run(first.id).summary
    fitted = summary["calibration"]
    trial = fitted["trial"]
    assert fitted["cluster"].endswith(":1x2") and trial["seconds"] <= trial["budget_s"] == 60
    measured = [r for r in summary["advice"]["layouts"] if r["measured"]]
    assert sorted(r["layout"] for r in measured) == sorted(trial["layouts"])
    assert {r["kind"] for r in measured} == set(fitted["per_kind"])
    assert len(measured) >= 1 and all(r["measured"]["step_s"] > 0 for r in measured)
    # the advice shown after the trial is calibrated by it, each kind by its own factor
    shown = store.run(again.id).summary["advice"]
    assert shown["notes"][0].startswith(
        f"CALIBRATED on this cluster by a calibration trial (--calibrate) of advice run {first.id}"
    )
    assert shown["notes"][1].startswith(f"calibration trial: {len(trial['layouts'])} layouts in")
    for r in shown["layouts"]:
        assert r["calibrated"] == first.id
        corrected = apply(r["raw_parts_s"], r["kind"], fitted)
        assert r["predicted_step_s"] == pytest.approx(sum(corrected.values()))
    # and so is the next advise on this cluster
    shell.run_line_magic("distributed", line)
    newest = max(advice_runs(shell), key=lambda r: r.started)
    assert newest.id not in (first.id, again.id)
    rows = store.run(newest.id).summary["advice"]["layouts"]
    assert all(r["calibrated"] == first.id for r in rows)


def test_a_verified_row_keeps_every_timed_step_of_its_slowest_rank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--verify`` (and the suite's rounds, which pool them) keeps each timed step's time, the
    slower rank's for each step (the ranks meet between steps), of every run, and asks the
    ranks for the steps it was told; the step's median stays the runs' median."""
    from jupyter_distributed.advise import verify as verify_module

    advice = _advice()
    cells: list[str] = []
    per_rank = [[0.010, 0.030, 0.012], [0.011, 0.020, 0.013]]

    class Shell:
        def __init__(self) -> None:
            self.user_ns: dict[str, Any] = {}

        def run_cell(self, code: str) -> Any:
            cells.append(code)
            self.user_ns[verify_module.PULLED] = [
                {"peak_bytes": 1, "step_seconds": sorted(s)[1], "step_seconds_all": s}
                for s in per_rank
            ]
            return SimpleNamespace(error_in_exec=None)

    got = verify_module.measure_row(advice, 0, Shell(), "build", None, "adamw", 2, steps=3)
    assert got["step_s_steps"] == [0.011, 0.030, 0.013] * 2
    assert got["step_s"] == pytest.approx(0.013)
    assert "steps=3," in cells[0]


def test_a_pipeline_of_one_microbatch_is_a_kind_of_its_own() -> None:
    """A pipeline of one microbatch runs its stages one after another (no two ranks' compute
    and messages on the cores at once): the trial's row of it corrects it alone, and the GPipe
    row corrects the other GPipe layouts alone (before, both were GPipe, and a held-out GPipe
    of 4 microbatches got the median of the two: 1.05 where its kind measured 1.3)."""
    one = _row("dp1×pp2 m=1 GPipe", "model-parallel", 2.0, 0.5, 0.8 * (2 * 2.0 + 2 * 0.5))
    eight = _row("dp1×pp2 m=8 GPipe", "model-parallel", 2.0, 0.5, 1.3 * (2 * 2.0 + 2 * 0.5))
    fitted = fit([one, eight], per_kind_rows=1)
    assert fitted is not None
    four = Candidate("model-parallel", 1, 2, 4, interleaved=False)
    single = Candidate("model-parallel", 1, 2, 1, interleaved=False)
    assert single.kind == kind_of(one) != kind_of(eight) == four.kind
    parts = {"compute": 1.0, "communication": 0.25}
    share_scaled = sum(apply(parts, "ddp", fitted).values())  # no factor of its own
    assert sum(apply(parts, four.kind, fitted).values()) == pytest.approx(1.3 * share_scaled)
    assert sum(apply(parts, single.kind, fitted).values()) == pytest.approx(0.8 * share_scaled)


def test_corrections_stored_before_still_give_one_microbatch_gpipes_factor() -> None:
    """A calibration stored before the kind existed (its one-microbatch row fitted as GPipe)
    applies as it did: GPipe's factor to a pipeline of one microbatch."""
    stored = {"compute": 1.0, "communication": 1.0, "per_kind": {"model-parallel GPipe": 1.5}}
    single = Candidate("model-parallel", 1, 2, 1, interleaved=False)
    assert apply({"compute": 1.0}, single.kind, stored) == {"compute": pytest.approx(1.5)}


def test_the_trial_runs_the_one_microbatch_pipeline_and_the_best_pipelined_gpipe() -> None:
    advice = _advice()
    chosen = [advice.layouts[i].candidate for i in trial_module.choose(advice)]
    assert sum(c.kind == ONE_MICRO for c in chosen) == 1
    gpipe = [c for c in chosen if c.kind == "model-parallel GPipe"]
    assert len(gpipe) == 2 and min(c.microbatches for c in gpipe) >= 2
