"""The advisor's step time by component: FSDP's framework work and the pipeline schedule's are
in the prediction, a pipeline's message costs the pairs' round trips, and one calibration trial
fits each component so that it carries to layouts of other shapes (no processes: in-process
timing and plain rows)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from jupyter_distributed.advise import advise  # noqa: E402
from jupyter_distributed.advise.calibrate import apply, fit  # noqa: E402
from jupyter_distributed.advise.comm import Links  # noqa: E402
from jupyter_distributed.advise.enumerate import Candidate  # noqa: E402
from jupyter_distributed.advise.intake import Analytic, from_numbers  # noqa: E402
from jupyter_distributed.advise.steptime import step_parts  # noqa: E402
from jupyter_distributed.advise.timing import Compute  # noqa: E402

PROBE = {  # 2 ranks, one intra-node pair, an all_reduce curve with a 0.5 ms call overhead
    "run_id": "probe-1",
    "world_size": 2,
    "pairs": [{"a": 0, "b": 1, "link": "intra", "latency_us": 40.0, "bandwidth_gbs": 1.5}],
    "allreduce": [{"bytes": 1024, "seconds": 5e-4}, {"bytes": 1 << 20, "seconds": 1.5e-3}],
}


def _deep() -> Any:  # many small units: FSDP's hooks outweigh the block
    return torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh()) for _ in range(8)]
    )


def test_fsdp_step_includes_what_the_framework_adds() -> None:
    """Under FSDP2 a block of many small units runs hooks and copies per unit that the plain
    block timed alone leaves out; the prediction times them (no-op collectives) as a part, and
    DDP's reducer likewise (one-rank group); the process group is gone afterwards."""
    api = advise(_deep, global_batch=2, procs_per_node=2, probe=PROBE)
    by = {r.candidate.name: r for r in api.layouts}
    fsdp = by["fsdp dp2"].parts_s
    assert fsdp["framework"] > 0.5 * fsdp["compute"]
    assert by["ddp dp2"].parts_s["framework"] >= 0  # DDP's reducer, on a one-rank group
    assert by["dp1×pp2 m=1 GPipe"].parts_s["framework"] > 0  # the schedule's own work
    assert not torch.distributed.is_initialized()  # the fake group is gone again
    assert not any(n.startswith("NOT TIMED") for n in api.notes)


def test_without_the_framework_timed_the_advice_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that already holds a process group cannot time DDP/FSDP's own work here:
    the advice says what its step times leave out."""
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    api = advise(_deep, global_batch=2, procs_per_node=2, probe=PROBE)
    assert "framework" not in {k for r in api.layouts for k in r.parts_s}
    assert any(n.startswith("NOT TIMED: what DDP/FSDP add") for n in api.notes)


def test_a_pipeline_message_costs_the_pairs_round_trips_not_a_collective_call() -> None:
    """A pipeline's message costs its ranks two of the probe's best pair round trips (hand-offs
    to gloo's thread on both sides), whatever the all_reduce curve's per-call overhead (fitted
    from noisy points, it moved 0.05-2.5 ms between probes and made the pipelines 2x slow or
    50-70 % short) and the pairs' median (4 round trips in a quick probe: one load spike made
    a send 60 ms); given hardware has no pairs measured: its one-way latency."""
    slow = Links({"intra": 40e-6}, {"intra": 1.5e9}, "p", (2e-3, 1e9), 2, {"intra": 15e-3})
    fast = Links({"intra": 40e-6}, {"intra": 1.5e9}, "p", (1e-4, 1e9), 2, {"intra": 60e-6})
    assert slow.p2p(0, spans_nodes=False) == pytest.approx(4 * 40e-6) == fast.p2p(0, False)
    assert slow.p2p(1.5e6, spans_nodes=False) == pytest.approx(4 * 40e-6 + 1e-3)
    across = Links({"inter": 90e-6}, {"inter": 1.5e9}, "p", (2e-3, 1e9), 2, {"inter": 1e-3})
    assert across.p2p(0, spans_nodes=True) == pytest.approx(4 * 90e-6)
    given = Links({"inter": 20e-6}, {"inter": 1e9}, "given")
    assert given.p2p(0, spans_nodes=True) == pytest.approx(20e-6)


def test_a_pipeline_step_is_its_slots_of_block_schedule_and_messages() -> None:
    """p stages and m microbatches: m + p - 1 slots of the slowest stage, each its block, the
    schedule's own work per microbatch (timed apart) and one message each way; then the
    optimizer. The schedule's work was missing (measured ~0.2-0.35 ms a microbatch here)."""
    c = Candidate("model-parallel", 1, 2, microbatches=4)
    info = from_numbers(Analytic(parameters=100, layers=2, hidden=8, heads=1, vocab=8))
    fast, slow = Compute(1e-3, 1e-4, (400,), 800), Compute(2e-3, 2e-4, (400,), 0)
    links = Links({"intra": 50e-6}, {"intra": 1e9}, "p", (2e-3, 1e9), 2, {"intra": 80e-6})
    parts, _ = step_parts(info, c, 1, (fast, slow), links, 2, (3e-4, 0.0))
    slots = 4 + 2 - 1
    assert parts["compute"] + parts["bubble"] == pytest.approx(slots * 2e-3)
    assert parts["framework"] == pytest.approx(slots * 3e-4)
    assert parts["communication"] == pytest.approx(slots * 2 * (4 * 50e-6 + 800 / 1e9))
    assert parts["optimizer"] == pytest.approx(2e-4)


def _row(strategy: str, compute: float, comm: float, **measured: float) -> dict[str, Any]:
    return {
        "strategy": strategy,
        "predicted_parts_s": {"compute": compute, "communication": comm},
        "predicted_bytes": {"total": 1},
        "measured": {"gib": 0.0, **measured} if measured else None,
    }


def test_one_trial_scales_by_the_ranks_measured_share_of_the_cores() -> None:
    """One measured layout whose ranks ran the plain block at 2x the advisor's time (their
    share of the cores now): every part of other layouts scales by that measured 2, not by the
    trial's step over its prediction (7/3, which carries the trial's own noise)."""
    trial = _row("ddp", 2.0, 1.0, step_s=7.0, plain_s=0.2, plain_predicted_s=0.1)
    fitted = fit([trial])
    assert fitted is not None
    assert fitted["compute"] == pytest.approx(2.0) == fitted["communication"]
    other = apply({"compute": 1.0, "bubble": 0.5, "communication": 4.0}, "model-parallel", fitted)
    assert sum(other.values()) == pytest.approx(2 * 5.5)


def test_three_trials_fit_communication_apart_from_compute() -> None:
    """With 3 layouts measured, communication is fitted on what the measured share of the
    cores leaves of their steps: here 3x, while compute is the measured 2x."""
    rows = [
        _row(s, c, m, step_s=2 * c + 3 * m, plain_s=0.2, plain_predicted_s=0.1)
        for s, c, m in (("ddp", 2.0, 1.0), ("fsdp", 1.0, 2.0), ("model-parallel", 1.0, 0.5))
    ]
    fitted = fit(rows)
    assert fitted is not None
    assert fitted["compute"] == pytest.approx(2.0)
    assert fitted["communication"] == pytest.approx(3.0)


def test_without_the_ranks_compute_timing_one_factor_is_fitted() -> None:
    """Rows stored before the ranks timed their plain block: one shared factor, as before."""
    fitted = fit([_row("ddp", 2.0, 1.0, step_s=6.0)])
    assert fitted is not None
    assert fitted["compute"] == pytest.approx(2.0) == fitted["communication"]


class _Waits(torch.nn.Module):  # type: ignore[misc,name-defined]  # torch: importorskip
    """A block whose forward waits 40 ms without computing: what a load spike does to a timed
    run (the process waits for a core)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        import time

        time.sleep(0.04)
        return self.lin(x)


def test_a_wait_for_the_cores_is_not_timed_as_compute() -> None:
    """Where a rank computes on one thread, the advisor times a block's work in CPU seconds, so
    a spike of other processes on the cores while it times does not land in every row (at load
    77 one had put every pipeline row 3-9x over); the ranks' share of the cores comes from
    ``--verify``'s timing on the ranks. With more threads a rank is timed in wall seconds."""
    from jupyter_distributed.advise.timing import stage_compute

    (one,) = stage_compute(_Waits, 1, None, 1, 4)
    assert one.fwd_bwd < 0.02  # the block's work: well under a millisecond here
    (two,) = stage_compute(_Waits, 1, None, 2, 4)
    assert two.fwd_bwd >= 0.04


def test_the_share_timed_between_the_steps_is_the_one_fitted() -> None:
    """A trial's ranks timed the plain block between their steps (4x the advisor's time: the
    load while they ran) and after them (2x: the load had gone): the correction is the 4x."""
    trial = _row("ddp", 2.0, 1.0, step_s=12.0, plain_s=0.2, plain_during_s=0.4,
                 plain_predicted_s=0.1)  # fmt: skip
    fitted = fit([trial])
    assert fitted is not None
    assert fitted["compute"] == pytest.approx(4.0) == fitted["communication"]


def test_a_rank_gets_the_threads_of_the_cores_it_may_run_on() -> None:
    """The advisor sizes a rank's threads by the cores this process may run on (its affinity,
    which the ranks it starts inherit), not every core of the machine."""
    import os

    from jupyter_distributed.advise.timing import rank_threads

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity and 2 cores")
    was = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(was)})
    try:
        assert rank_threads(1) == (1, 1.0)
        assert rank_threads(2) == (1, 2.0)
    finally:
        os.sched_setaffinity(0, was)


def test_a_probe_stopped_at_small_sizes_does_not_set_the_rate() -> None:
    """A quick probe that spent its budget in a busy moment kept two small all_reduce points
    (1 KiB in 2 ms, 4 KiB in 32 ms): their "rate" (128 KB/s) is the call's overhead, and a
    656 KB all-reduce was predicted 5.2 s (measured 22 ms). The bytes go at the pairs' rate."""
    from jupyter_distributed.advise.comm import fit_links

    probe = {
        "run_id": "p", "world_size": 4,
        "pairs": [{"a": 0, "b": 1, "link": "intra", "latency_us": 50.0, "bandwidth_gbs": 1.0}],
        "allreduce": [{"bytes": 1024, "seconds": 2e-3}, {"bytes": 4096, "seconds": 32e-3}],
    }  # fmt: skip
    seconds = fit_links(probe).allreduce(656_000, 4, spans_nodes=False)
    assert 0.017 <= seconds < 0.02  # the points' median call, then the bytes at the pairs' rate


def test_a_collective_costs_the_probes_call_after_work_not_the_curves_overhead() -> None:
    """DDP's bucket all-reduce (and FSDP's calls) cost the probe's small all_reduce timed
    right after the ranks' own work, as a step makes it, plus the bytes at the curve's rate;
    not the curve's fitted overhead (0.00-2.52 ms between probes of the same ranks, 0 here:
    a step's call priced as its bytes alone, where the ranks' DDP step spent 2-3 ms more than
    under ``no_sync``). A probe from before it had this figure keeps the curve's overhead."""
    from jupyter_distributed.advise.comm import fit_links

    probe = {**PROBE, "allreduce": [{"bytes": 1024, "seconds": 1024 / 1e9},
                                    {"bytes": 1 << 20, "seconds": (1 << 20) / 1e9}]}  # fmt: skip
    links = fit_links({**probe, "allreduce_call_s": 2e-3})
    assert links.allreduce(661_000, 2, spans_nodes=False) == pytest.approx(2e-3 + 661e-6)
    assert links.gather(661_000, 2, spans_nodes=False) == pytest.approx(2e-3 + 330.5e-6)
    c = Candidate("ddp", 2, 1)
    info = from_numbers(Analytic(parameters=100, layers=2, hidden=8, heads=1, vocab=8))
    one = Compute(1e-3, 1e-4, (400,), 0)
    parts, _ = step_parts(info, c, 1, (one,), links, 2)
    assert parts["communication"] == pytest.approx(2e-3 + 400e-9)
    assert fit_links(probe).allreduce(661_000, 2, False) == pytest.approx(661e-6)  # old probe


def test_no_pipeline_layout_has_a_stage_without_parameters() -> None:
    """Cut into 4, a Linear-ReLU-Linear-ReLU-Linear model leaves a stage with only a ReLU:
    its optimizer has nothing to step (torch refuses an empty parameter list), so no 4-stage
    layout is listed; 2 stages are."""
    from jupyter_distributed.advise.enumerate import candidates
    from jupyter_distributed.advise.intake import from_factory

    def wide() -> Any:
        lin = torch.nn.Linear
        relu = torch.nn.ReLU
        return torch.nn.Sequential(lin(8, 16), relu(), lin(16, 16), relu(), lin(16, 8))

    stages = {c.pp for c in candidates(from_factory(wide, None), 4, 8)}
    assert stages == {1, 2}
