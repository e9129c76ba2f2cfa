"""The parallelism advisor (``%distributed advise`` and ``advise()``): one small model, a
recorded probe, the CLI against the API, the top launch line through the real magic, the
memory prediction against real ranks, and bad input as one line each."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from .core_helpers import shell  # noqa: F401 (a fixture)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(240)

from jupyter_distributed.advise import advise  # noqa: E402
from jupyter_distributed.advise.verify import verify  # noqa: E402
from jupyter_distributed.events import RunState  # noqa: E402
from jupyter_distributed.history.records import RunRecord  # noqa: E402

MODEL = """
import torch
def build():
    return torch.nn.Sequential(
        torch.nn.Embedding(512, 64),
        *[torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
          for _ in range(3)],
        torch.nn.Linear(64, 512),
    )
def broken():
    raise ValueError("no such checkpoint")
"""
PROBE = {  # a 2-rank probe as %distributed probe stores it (one intra-node pair)
    "library": "gloo",
    "world_size": 2,
    "hosts": ["h", "h"],
    "pairs": [{"a": 0, "b": 1, "link": "intra", "latency_us": 40.0, "bandwidth_gbs": 1.5}],
    "groups": {},
    "allreduce": [],
}


def recorded_probe(shell: Any) -> str:  # noqa: F811
    store = shell.user_ns["_jd_session"].store
    run = RunRecord(id="probe-1", backend="local", world_size=2, ranks=[0, 1],
                    state=RunState.COMPLETED, started=1.0, ended=2.0)  # fmt: skip
    store.create_run(run)
    store.update_summary(run.id, probe={**PROBE, "run_id": run.id})
    return run.id


def advice_runs(shell: Any) -> list[Any]:  # noqa: F811
    store = shell.user_ns["_jd_session"].store
    return [r for r in store.runs() if r.summary.get("kind") == "advice"]


def test_cli_and_api_give_the_same_table(shell: Any) -> None:  # noqa: F811
    shell.run_cell(MODEL)
    recorded_probe(shell)
    shell.run_line_magic("distributed", "advise --model build --global-batch 8 --seq 16 -n 2")
    (stored,) = advice_runs(shell)
    assert stored.state is RunState.COMPLETED and stored.ranks == []
    api = advise(shell.user_ns["build"], global_batch=8, seq=16, procs_per_node=2,
                 probe={**PROBE, "run_id": "probe-1"})  # fmt: skip
    assert stored.summary["advice"]["layouts"] == [r.to_json() for r in api.layouts]
    assert "<table>" in api._repr_html_()
    best = api.rows[0]
    assert best["launch"].startswith("%%distributed -n 2 --strategy ")
    assert best["fits"] and best["predicted_gib"] > 0
    # the launch line runs as is through the real magic
    result = shell.run_cell(f"{best['launch']} --dry-run\npass")
    assert result.error_in_exec is None and result.error_before_exec is None


def test_memory_prediction_matches_real_ranks(shell: Any) -> None:  # noqa: F811
    shell.run_cell(MODEL)
    api = advise(shell.user_ns["build"], global_batch=32, seq=64, procs_per_node=2, probe=PROBE)
    api.layouts = [r for r in api.layouts if r.candidate.strategy in ("ddp", "fsdp")]
    verify(api, 2, shell, "build", None, "adamw")
    for row in api.layouts:
        assert row.measured is not None, row.candidate.name
        # predicted peak live tensor bytes per rank within 5 % of the ranks' measured peak
        assert abs(row.measured["memory_error"]) <= 0.05, (row.candidate.name, row.measured)


def test_with_no_probe_in_the_history_a_quick_one_runs_first(
    shell: Any,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    shell.run_cell(MODEL)
    shell.run_line_magic("distributed", "advise --model build --global-batch 8 --seq 16 -n 2")
    said = capsys.readouterr().out
    assert "running %distributed probe --quick --nodes 1 --procs-per-node 2 first" in said
    store = shell.user_ns["_jd_session"].store
    (probe_run,) = [r for r in store.runs() if "probe" in r.summary]
    assert f"advise: probe {probe_run.id} took" in said
    (stored,) = advice_runs(shell)
    assert stored.summary["advice"]["inputs"]["probe_run"] == probe_run.id
    shell.run_line_magic("distributed", "advise --model build --global-batch 8 --seq 16 -n 2")
    assert "running %distributed probe" not in capsys.readouterr().out  # the stored one serves


def test_fsdp_memory_on_four_ranks_is_not_under_predicted(shell: Any) -> None:  # noqa: F811
    """FSDP2 on 4 ranks (2 per core): at its backward's worst moment a rank holds, besides its
    shards, the saved activations, a unit gathered, the next one being prefetched (with gloo's
    own all-gather buffer) and the previous one's reduce-scatter input. The prediction once left
    these out and was 25-43 % short."""
    shell.run_cell(MODEL)
    api = advise(shell.user_ns["build"], global_batch=8, seq=16, procs_per_node=4, probe=PROBE)
    api.layouts = [r for r in api.layouts if r.candidate.strategy == "fsdp"]
    verify(api, 1, shell, "build", None, "adamw")
    (row,) = api.layouts
    assert row.measured is not None
    # the launch line's collectives free gloo's buffers before they return, so the peak is one
    # moment in every run (1,289,172 B against 1,288,768 predicted); the prediction that counted
    # a copy gloo might free late was +10.3 % over it (and 0 % in the runs that held it)
    assert -0.01 <= row.measured["memory_error"] <= 0.01, row.measured


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("--model broken --global-batch 8", "broken() raised ValueError: no such checkpoint"),
        ("--model build --global-batch 9 -n 2", "not divisible by the 2 ranks"),
        ("--model build --global-batch 8 --memory-gib 0.0001", "no layout fits"),
        ("--model nothing --global-batch 8", "no such name in the notebook"),
    ],
)
def test_bad_input_is_one_line(shell: Any, line: str, said: str) -> None:  # noqa: F811
    shell.run_cell(MODEL)
    recorded_probe(shell)
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("distributed", f"advise {line}")
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert advice_runs(shell) == []


def test_ranks_get_their_share_of_the_cores(shell: Any) -> None:  # noqa: F811
    """Ranks forked from the fork server (which imported torch before OMP_NUM_THREADS was
    set) run the torch threads the advisor times compute with: one each where ranks share a
    machine, as under torchrun; more, and ranks that share cores spin against each other."""
    from jupyter_distributed.advise.timing import rank_threads

    shell.run_cell(
        "%%distributed -n 2 --strategy ddp --pull _jd_threads --quiet\n"
        "import torch\n_jd_threads = torch.get_num_threads()\n"
    )
    assert shell.user_ns["_jd_threads"] == [rank_threads(2)[0]] * 2


def test_verify_stores_measured_and_the_next_advise_is_calibrated(shell: Any) -> None:  # noqa: F811
    from jupyter_distributed.advise.calibrate import apply

    shell.run_cell(MODEL)
    recorded_probe(shell)
    line = "advise --model build --global-batch 8 --seq 16 -n 2"
    shell.run_line_magic("distributed", f"{line} --verify 2")
    store = shell.user_ns["_jd_session"].store
    (first,) = advice_runs(shell)
    summary = store.run(first.id).summary
    verified = [r for r in summary["advice"]["layouts"] if r["measured"]]
    assert len(verified) == 2
    for r in verified:  # predicted and measured, side by side, in the history
        assert r["predicted_step_s"] > 0 and r["measured"]["step_s"] > 0
        assert r["predicted_gib"] > 0 and r["measured"]["gib"] > 0
        # the ranks timed the plain block too, and the advisor the same block here
        assert r["measured"]["plain_s"] > 0 and r["measured"]["plain_predicted_s"] > 0
    fitted = summary["calibration"]
    assert fitted["layouts"] == 2 and fitted["cluster"].endswith(":1x2")
    assert fitted["compute"] > 0 and fitted["communication"] > 0 and fitted["memory"] > 0

    shell.run_line_magic("distributed", line)
    (second,) = [r for r in advice_runs(shell) if r.id != first.id]
    advice = store.run(second.id).summary["advice"]
    assert advice["notes"][0].startswith(
        f"CALIBRATED on this cluster by --verify of advice run {first.id}"
    )
    for r in advice["layouts"]:  # every row starts from the fitted corrections
        assert r["calibrated"] == first.id
        corrected = apply(r["raw_parts_s"], r["kind"], fitted)
        assert r["predicted_step_s"] == pytest.approx(sum(corrected.values()))

    shell.run_line_magic("distributed", f"{line} --uncalibrated")
    newest = max(advice_runs(shell), key=lambda r: r.started)
    assert all(not r["calibrated"] for r in store.run(newest.id).summary["advice"]["layouts"])


def test_the_table_marks_pareto_megatron_and_what_to_blame(shell: Any) -> None:  # noqa: F811
    from jupyter_distributed.advise.verify import blame

    shell.run_cell(MODEL)
    api = advise(shell.user_ns["build"], global_batch=8, seq=16, procs_per_node=2, probe=PROBE)
    rows = [r for r in api.rows if r["fits"]]
    budget = api.inputs["memory_budget_bytes"] / 2**30
    front = [r for r in rows if r["pareto"]]
    assert rows[0]["pareto"]  # the fastest layout is on the front of throughput and headroom
    for r in rows:  # a layout off the front has one on it at least as fast with as much headroom
        beaten = any(
            f["predicted_samples_per_s"] >= r["predicted_samples_per_s"]
            and budget - f["predicted_gib"] >= budget - r["predicted_gib"]
            for f in front
            if f is not r
        )
        assert r["pareto"] or beaten, r["layout"]
    by = {r["layout"]: r for r in api.rows}
    assert by["ddp dp2"]["megatron"].startswith("agrees: data parallel")
    gpipe = by["dp1×pp2 m=1 GPipe"]["megatron"]
    assert "a pipeline although data parallel fits" in gpipe and "bubble (p−1)/m = 100%" in gpipe
    assert "Pareto front" in api._repr_html_() and "font-weight:bold" in api._repr_html_()
    assert "(predicted; ◆ Pareto front" in api.text()
    # a layout 50 % too fast, where the fit says communication cost 3× its prediction
    measured = {"memory_error": 0.0, "time_error": -0.5}
    fitted = {"compute": 1.0, "communication": 3.0}
    assert blame(api.layouts[0], measured, fitted) == "step time -50% (to blame: communication)"


def test_a_busy_machine_is_said(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import os

    shell.run_cell(MODEL)
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    api = advise(shell.user_ns["build"], global_batch=8, seq=16, procs_per_node=2, probe=PROBE)
    assert any(n.startswith("this machine is busy (load average 64.0") for n in api.notes)


def _deep() -> Any:
    return torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh()) for _ in range(4)]
    )


def test_memory_between_traced_microbatches_is_interpolated_exactly() -> None:
    """Traced at the smallest and the largest microbatch only, a size between them that peaks
    in the same phase gets what a trace of its own gives, and the notes say what was traced."""
    from jupyter_distributed.advise.memory import trace
    from jupyter_distributed.advise.sampled import sample

    got = sample(_deep, {1: {8}, 2: {1, 2, 4, 8}}, None, "adamw", 1)
    assert got.traced == {1: [8], 2: [1, 8]}
    for micro in (2, 4):
        assert got.parts[2, micro] == trace(_deep, micro, None, "adamw", 2)
    assert "2 stages: 1/8 of 1/2/4/8" in got.note()


def _logits() -> Any:
    return torch.nn.Sequential(torch.nn.Embedding(1000, 64), torch.nn.Linear(64, 1000))


def test_fsdp_does_not_count_the_head_gathered_while_the_loss_runs_backward() -> None:
    """A model whose peak is the loss's backward (large logits): FSDP2 gathers the head only when
    its own backward begins, after that peak, so the prediction then holds no gathered head and
    no head gradient (measured on gloo ranks: ``tfm`` was 2 head units, +12 … +23 %, over); with
    gloo's own collectives, the output of the forward's last all-gather (the head), which gloo
    may free late."""
    from jupyter_distributed.advise.fsdp import fsdp_memory
    from jupyter_distributed.advise.memory import trace

    (whole,) = trace(_logits, 8, 32, "adamw", 1)
    assert whole.loss_peak == whole.activations  # the step's peak is before the head's backward
    head = whole.unit_bytes[-1]
    shard = -(-whole.params // 4)
    assert fsdp_memory(whole, (), 0, 4, 2, 0.0).total == 3 * shard + whole.activations
    assert fsdp_memory(whole, (), 0, 4, 2, 0.0, "nccl").total == 3 * shard + whole.activations
    got = fsdp_memory(whole, (), 0, 4, 2, 0.0, "gloo-late")
    assert got.total == 3 * shard + whole.activations + head


def _blocks() -> Any:  # the suite's mlp: embedding, 3 MLP blocks, a head (5 FSDP units)
    lin = torch.nn.Linear
    blocks = [torch.nn.Sequential(lin(64, 256), torch.nn.GELU(), lin(256, 64)) for _ in range(3)]
    return torch.nn.Sequential(torch.nn.Embedding(512, 64), *blocks, lin(64, 512))


def test_fsdp_moments_are_what_gloo_ranks_hold() -> None:
    """Measured with the allocator's own count (4 gloo ranks, ``mlp``, 2 samples a rank): the peak
    is the last block's backward as it prefetches the block before: its shards and optimizer
    state, the head's gradient shard, every saved activation, the block gathered, the head's
    reduce-scatter input (FSDP keeps one), the prefetch's output and gloo's buffer: 1,289,172 B,
    in every run with the launch line's collectives. With gloo's own, its copy of the head's
    reduce-scatter input was sometimes not yet freed on its thread: 1,422,292 B (1 run in 4).
    An older prediction (1,512,832 B) held two such copies and no real moment. Without gloo's
    buffer (NCCL's rule; torch's fake process group, real tensors: 1,256,404 B) the worst moment
    is the last block's backward at its traced peak (its gradients as computed, what it still
    saves), the block gathered and the prefetch: the old rule held every saved activation and
    every gradient of the block at once (1,288,768 B, +2.6 %)."""
    from jupyter_distributed.advise.fsdp import fsdp_memory
    from jupyter_distributed.advise.memory import trace

    (whole,) = trace(_blocks, 2, 16, "adamw", 1)
    _, _, b2, b3, head = whole.unit_bytes
    shard = -(-whole.params // 4)
    held = 3 * shard + -(-head // 4) + sum(whole.unit_saved[:4]) + b3 + head + 2 * b2
    assert fsdp_memory(whole, (), 0, 4, 2, 0.0).total == held == 1_288_768
    at_bw = 3 * shard + -(-head // 4) + whole.unit_bw[3] + head + b3 + b2
    assert fsdp_memory(whole, (), 0, 4, 2, 0.0, "nccl").total == at_bw == 1_256_008
    assert fsdp_memory(whole, (), 0, 4, 2, 0.0, "gloo-late").total == held + head
    with pytest.raises(ValueError, match="one of gloo, gloo-late, nccl"):
        fsdp_memory(whole, (), 0, 4, 2, 0.0, "mpi")


def _outer() -> Any:  # a large temporary (an outer product) in a child without parameters
    class Outer(torch.nn.Module):  # type: ignore[misc,name-defined]  # torch: importorskip
        def forward(self, x: Any) -> Any:
            return (x.unsqueeze(-1) * x.unsqueeze(-2)).sum(-1)

    return torch.nn.Sequential(torch.nn.Linear(64, 64), Outer(), torch.nn.Linear(64, 64))


def test_fsdp_peak_inside_a_child_without_parameters() -> None:
    """The outer product's backward peaks between the two units: the head already reduced (its
    input kept, its gradient shard), the first unit prefetched, nothing gathered. The old
    prediction held the head gathered and its gradient there instead (−3.7 … −10.3 % short)."""
    from jupyter_distributed.advise.fsdp import fsdp_memory
    from jupyter_distributed.advise.memory import trace

    (whole,) = trace(_outer, 4, None, "adamw", 1)
    first, _, head = whole.unit_bytes
    shard = -(-whole.params // 2)
    at = 3 * shard + -(-head // 2) + whole.unit_bw[1] + head + first
    assert whole.unit_bw[1] > 4 * whole.unit_saved[1]  # the temporary: far above what it saves
    assert fsdp_memory(whole, (), 0, 2, 2, 0.0).total == at
    assert fsdp_memory(whole, (), 0, 2, 2, 0.0, "gloo-late").total == at + head  # the late copy


def test_a_pipeline_stage_that_peaks_in_its_optimizer_step() -> None:
    """``mlp``'s first of 2 stages, 1F1B with 2 microbatches: the traced peak is AdamW's step (its
    temporaries), where no microbatch is in flight; the old prediction added the other
    microbatch's saved activations to that moment (+7.9 % over the measured 1,862,196 B)."""
    from jupyter_distributed.advise.memory import layout_memory, trace

    stages = trace(_blocks, 2, 16, "adamw", 2)
    first = stages[0]
    assert first.optim > 2 * first.params  # the step's temporaries are in the peak
    got = layout_memory(stages, (), 0, "model-parallel", 2, 2, True, 0.0)
    step = 2 * first.params + first.optim + first.activations + first.boundary
    assert step <= got.total < step + first.saved // 8  # the old one: step + saved
    assert abs(got.total / 1_862_196 - 1) < 0.001


def test_ddp_and_pipeline_memory_count_what_gloo_ranks_hold() -> None:
    """Measured with the allocator's own count: DDP holds one parameter-sized set of buckets
    (not two), and a pipeline stage with 2 microbatches runs the second one's backward with the
    first one's gradients already accumulated, so its whole gradient is counted."""
    from jupyter_distributed.advise.memory import layout_memory, trace

    (whole,) = trace(_logits, 8, 32, "adamw", 1)
    ddp = layout_memory((whole,), (), 0, "ddp", 2, 1, False, 0.0)
    assert ddp.buffers == whole.params
    stages = trace(_logits, 2, 32, "adamw", 2)
    assert stages[1].grads < stages[1].params  # one microbatch's peak predates its gradient
    pipe = layout_memory(stages, (), 0, "model-parallel", 1, 2, True, 0.0)
    assert pipe.grads == pipe.params
