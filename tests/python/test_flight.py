"""torch's flight recorder, without processes: a dump summarised, carried by the stacks answer,
and the hang diagnosis it gives (pure functions, fabricated dumps)."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest

from jupyter_distributed.cluster.decode import Ranks, decode
from jupyter_distributed.cluster.hang import diagnose
from jupyter_distributed.cluster.inbox import StacksReply
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import RankCoords
from jupyter_distributed.protocol.flight import Collective, GroupFlight, op_name, summarize
from jupyter_distributed.protocol.messages import parse
from jupyter_distributed.protocol.reports import Stacks
from jupyter_distributed.protocol.stacks import Frame, RankStacks, ThreadStack
from jupyter_distributed.worker import stacks as worker_stacks
from jupyter_distributed.worker.torch_helpers import enable_flight_recorder


def _entry(
    seq: int, op: str = "gloo:all_reduce", retired: bool = False, **kw: Any
) -> dict[str, Any]:
    return {
        "collective_seq_id": seq,
        "profiling_name": op,
        "state": "scheduled",
        "retired": retired,
        "process_group": ["0", "default_pg"],
        "input_sizes": [[4]],
        "is_p2p": False,
        **kw,
    }


def _dump(enqueued: int, completed: int, *entries: dict[str, Any]) -> dict[str, Any]:
    status = {
        "last_completed_collective": str(completed),
        "last_enqueued_collective": str(enqueued),
        "last_started_collective": "-1",
    }
    return {
        "entries": list(entries),
        "pg_status": {"0": status},
        "pg_config": {"": {"ranks": "[0, 1]"}},
        "version": "2.10",
    }


# what torch 2.13 (gloo) gave for a rank in all_reduce #3 (its #1 and #2 retired)
REAL = _dump(3, 2, _entry(1, retired=True), _entry(2, retired=True), _entry(3))


def test_a_dump_is_summarised_per_group_with_only_its_active_collectives() -> None:
    (group,) = summarize(json.dumps(REAL).encode())
    assert group == GroupFlight("default_pg", 3, -1, 2, (Collective(3, "all_reduce", ((4,),)),))
    assert group.last == 3
    assert op_name("nccl:broadcast") == "broadcast" and op_name("barrier") == "barrier"
    sub = _dump(5, 5)
    sub["pg_status"]["1"] = {"last_enqueued_collective": "1", "last_completed_collective": "0"}
    sub["entries"] = [_entry(1, "nccl:all_gather", process_group=["1", "tp"])]
    groups = summarize(sub)
    assert [g.group for g in groups] == ["default_pg", "tp"]
    assert groups[1].active == (Collective(1, "all_gather", ((4,),)),)
    with pytest.raises(ValueError, match="a JSON object"):
        summarize(b"[1, 2]")


def test_the_summary_travels_in_the_stacks_answer_and_older_peers_still_read() -> None:
    flight = [g.to_json() for g in summarize(REAL)]
    thread = ThreadStack("MainThread", True, (Frame("<cell r>", 2, "<module>"),)).to_json()
    message = parse(json.loads(json.dumps(Stacks("q", [thread], "ready", flight).to_header())))
    assert isinstance(message, Stacks) and message.flight == flight
    old = {"type": "stacks", "request_id": "q", "threads": [thread], "stage": "ready"}
    assert parse(old) == Stacks("q", [thread], "ready")  # a rank without the field: None
    coords = RankCoords(0, 0, 0, 0, 0, 0)
    ranks = Ranks({r: RankInfo(r, "h", None, "idle", coords) for r in (0, 1)})
    item = decode(ranks, 1, message, []).item
    assert isinstance(item, StacksReply) and item.stacks.flight == summarize(REAL)
    data = item.stacks.to_json()
    assert RankStacks.from_json(data) == item.stacks
    assert "flight" not in RankStacks(1, ()).to_json()  # the wire fixtures stay as they were
    bad = decode(ranks, 1, Stacks("q", [thread], "ready", [{"active": [["x"]]}]), []).item
    assert isinstance(bad, StacksReply) and bad.stacks.flight == ()  # stacks kept, summary not
    assert bad.stacks.where is not None and bad.stacks.where.cell_line == 2


CELL = "<cell r1>"
SLEEP = (Frame(CELL, 8, "<module>", "", "time.sleep(60)"),)
ALL_REDUCE = (
    Frame(CELL, 6, "<module>", "", "dist.all_reduce(t)"),
    Frame("/x/site-packages/torch/distributed/distributed_c10d.py", 3252, "all_reduce",
          "torch.distributed.distributed_c10d"),
)  # fmt: skip


def _rank(rank: int, frames: tuple[Frame, ...], *flight: GroupFlight) -> RankStacks:
    return RankStacks(rank, (ThreadStack("MainThread", True, frames),), "ready", flight=flight)


def _group(enqueued: int, completed: int, *active: Collective) -> GroupFlight:
    return GroupFlight("default_pg", enqueued, -1, completed, active)


def test_the_collective_that_hangs_comes_first_with_each_ranks_sequence_ids() -> None:
    stacks = {
        0: _rank(0, ALL_REDUCE, _group(4, 3, Collective(4, "all_reduce", ((4,),)))),
        1: _rank(1, SLEEP, _group(3, 3)),
    }
    d = diagnose(stacks, [0, 1])
    assert d.headline == (
        "all_reduce #4 (default_pg) was entered by 1 of 2 ranks (rank 0); "
        "rank 1's last collective is #3 — rank 1 is at cell line 8: time.sleep(60); "
        "rank 0 waits in torch.distributed.all_reduce (cell line 6: dist.all_reduce(t))"
    )
    assert d.details[0] == (
        "--- collectives in default_pg (torch flight recorder): "
        "rank 0 enqueued #4, completed #3; rank 1 enqueued #3, completed #3"
    )
    # a rank that finished the cell never entered it; one that entered none says so
    d = diagnose({0: stacks[0]}, [0, 1], finished=[1])
    assert d.headline.startswith(
        "all_reduce #4 (default_pg) was entered by 1 of 2 ranks (rank 0); "
        "rank 1 finished the cell without entering it; rank 0 waits in"
    )
    assert d.headline.count("finished the cell") == 1
    d = diagnose({0: stacks[0], 1: _rank(1, SLEEP, _group(-1, -1))}, [0, 1])
    assert "rank 1 entered no collective in default_pg — rank 1 is at cell line 8" in d.headline


def test_ranks_that_all_entered_are_told_apart_by_op_or_size() -> None:
    def entered(rank: int, c: Collective) -> RankStacks:
        return _rank(rank, ALL_REDUCE, _group(4, 3, c))

    a, b = Collective(4, "all_reduce", ((4,),)), Collective(4, "all_reduce", ((8,),))
    d = diagnose({0: entered(0, a), 1: entered(1, b)}, [0, 1])
    assert d.headline.startswith(
        "all_reduce #4 (default_pg) was entered by 2 of 2 ranks (ranks 0, 1) "
        "with different sizes: rank 0 [4], rank 1 [8]"
    )
    d = diagnose({0: entered(0, a), 1: entered(1, Collective(4, "broadcast"))}, [0, 1])
    assert d.headline.startswith("collective #4 (default_pg) was entered by 2 of 2 ranks")
    assert "as different collectives: rank 0 all_reduce, rank 1 broadcast" in d.headline
    d = diagnose({0: entered(0, a), 1: entered(1, a)}, [0, 1])
    assert "was entered by 2 of 2 ranks (ranks 0, 1) and has not completed" in d.headline


def test_without_flight_recorder_data_the_diagnosis_is_as_before() -> None:
    stacks = {1: _rank(1, ALL_REDUCE), 0: _rank(0, SLEEP, _group(3, 3))}  # none active
    d = diagnose(stacks, [0, 1])
    assert d.headline.startswith("rank 0 is at cell line 8: time.sleep(60); rank 1 waits in")
    assert d.headline.endswith(
        "the collective torch.distributed.all_reduce was entered by 1 of 2 ranks "
        "(rank 0 never entered it)"
    )
    assert not any("flight recorder" in line for line in d.details)
    d = diagnose({0: _rank(0, ALL_REDUCE, _group(4, 3, Collective(4, "x")))}, whole=False)
    assert d.headline.startswith("rank 0 waits in")  # one tile's stacks: no claim on others


def test_ranks_record_collectives_unless_the_user_chose_a_size() -> None:
    env: dict[str, str] = {}
    enable_flight_recorder(env)
    assert env == {"TORCH_FR_BUFFER_SIZE": "2000"}
    for name in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        env = {name: "0"}
        enable_flight_recorder(env)
        assert env == {name: "0"}


def test_a_failing_recorder_only_leaves_the_summary_out(monkeypatch: pytest.MonkeyPatch) -> None:
    dist = types.SimpleNamespace(is_initialized=lambda: True)
    c10d = types.ModuleType("c10d")
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    monkeypatch.setitem(sys.modules, "torch._C._distributed_c10d", c10d)
    assert worker_stacks.flight_summary() is None  # no dump function in this build
    c10d._dump_nccl_trace_json = lambda *_: json.dumps(REAL).encode()  # type: ignore[attr-defined]
    assert worker_stacks.flight_summary() == [g.to_json() for g in summarize(REAL)]

    def broken(*_: Any) -> bytes:
        raise RuntimeError("recorder off")

    c10d._dump_fr_trace_json = broken  # type: ignore[attr-defined]
    assert worker_stacks.flight_summary() is None
    dist.is_initialized = lambda: False
    assert worker_stacks.flight_summary() is None
