"""The wire fixtures: one real JSON document of each shape the server extension sends.

The documents are made here by the real code (a real store, the events' and failures'
``to_json``, the endpoints' ``History`` and the live stream's ``read_slice``) and kept in
``tests/wire/``. The TypeScript suite type-checks the same documents against the panel's
interfaces (``tests/ts/wire.fixtures.ts`` is generated from them, each typed), so a shape
that changes on one side fails the other side's check.

After a deliberate change of the JSON, rewrite them with one command::

    make wire-fixtures      # UPDATE_WIRE_FIXTURES=1 pytest tests/python/test_wire.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.errors import RankFailure
from jupyter_distributed.events import (
    DisplayEvent,
    ErrorEvent,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
    StacksEvent,
    Stream,
)
from jupyter_distributed.history.records import RunRecord
from jupyter_distributed.history.store import Store
from jupyter_distributed.probe import assemble
from jupyter_distributed.protocol.stacks import Frame, RankStacks, ThreadStack
from jupyter_distributed.server.api import History, NotFound, Query
from jupyter_distributed.server.nodebatch import Hosts
from jupyter_distributed.server.stream import read_slice

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "wire"
TS_MODULE = ROOT / "tests" / "ts" / "wire.fixtures.ts"
UPDATE = os.environ.get("UPDATE_WIRE_FIXTURES") == "1"

# Each fixture's name and the TypeScript interface (in labextension/src/wire.ts) it must satisfy.
TYPES = {
    "version": "VersionReply",
    "runs": "RunsReply",
    "run": "RunReply",
    "logs": "LogsReply",
    "metrics": "MetricsReply",
    "stream": "StreamMessage",
    "streamnodes": "StreamMessage",
    "control": "ControlReply",
    "deleted": "DeleteReply",
    "stacks": "StacksReply",
    "display": "DisplayReply",
    "error": "ErrorReply",
}

T0 = 1_700_000_000.0
PNG = (  # 1×1
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
STACK = RankStacks(
    1,
    (
        ThreadStack(
            "MainThread",
            True,
            (
                Frame("<cell run-wire>", 1, "<module>", "", "dist.barrier()"),
                Frame(
                    "/site-packages/torch/distributed/distributed_c10d.py",
                    5356,
                    "barrier",
                    "torch.distributed.distributed_c10d",
                    "work.wait()",
                ),
            ),
        ),
    ),
    "ready",
).to_json()


def record_a_run(store: Store) -> str:
    """A two-rank run that sees every kind of event: it waits in a scheduler's queue, then
    runs; rank 1 is killed by SIGKILL. Its summary holds a probe's result (as a run of
    ``%distributed probe`` has it), whose pairs the runs list counts and the run has."""
    run_id = "run-wire"
    store.create_run(
        RunRecord(
            id=run_id,
            backend="local",
            world_size=2,
            ranks=[0, 1],
            state=RunState.RUNNING,
            cluster_id="cluster-wire",
            spec={"backend": "local", "procs_per_node": 2, "nodes": 1},
            source="report(samples=64)",
            notebook="train.ipynb",
            cell_id="cell-1",
            host="laptop",
            kernel_pid=4242,
            started=T0,
            kernel_id="4f9c2d1e-7b3a-4e8f-9c61-2d5a8b0e3f47",
        ),
        coords={
            r: {"rank": r, "local_rank": r, "node_rank": 0, "data_parallel": r, "host": "laptop"}
            for r in (0, 1)
        },
    )
    failure = RankFailure(
        rank=1,
        t=T0 + 3,
        host="laptop",
        pid=1001,
        ename="",
        evalue="",
        exit_code=-9,
        signal=9,
        kind="exit",
    )
    store.append(
        [
            RunEvent(run_id, T0 + 0.1, RunState.QUEUED, "job 7 PENDING Resources"),
            RunEvent(run_id, T0 + 0.4, RunState.RUNNING),
            RankEvent(run_id, 0, T0 + 0.5, RankState.RUNNING, "laptop", 1000),
            RankEvent(run_id, 1, T0 + 0.5, RankState.RUNNING, "laptop", 1001),
            OutputEvent(run_id, 0, T0 + 1, Stream.STDOUT, "epoch 0\n"),
            OutputEvent(run_id, 1, T0 + 1, Stream.STDERR, "warning: slow disk\n"),
            MetricEvent(run_id, 0, T0 + 2, {"samples": 64.0, "loss": 0.5}),
            MetricEvent(run_id, 1, T0 + 2, {"samples": 64.0, "sys.cpu": 93.5}),
            DisplayEvent(run_id, 0, T0 + 2.2, {"image/png": PNG, "text/plain": "<Figure>"}),
            OutputEvent(run_id, 0, T0 + 2.5, Stream.RESULT, "0.5"),
            RankEvent(run_id, 0, T0 + 2.5, RankState.DONE, "laptop", 1000),
            StacksEvent(
                run_id,
                T0 + 2.9,
                "killed",
                "rank 1 waits in torch.distributed.barrier"
                " (cell line 1: dist.barrier()); rank 0 finished the cell",
                {1: STACK},
            ),
            ErrorEvent(run_id, failure),
            RunEvent(run_id, T0 + 4, RunState.FAILED, failure.summary),
        ]
    )
    pair = {
        "latency_us": 9.5,
        "bandwidth_gbs": 2.25,
        "median_latency_us": 11.0,
        "median_bandwidth_gbs": 2.0,
    }
    curve = [{"bytes": 1024, "seconds": 1e-5, "algbw_gbs": 0.1, "busbw_gbs": 0.1}]
    measured = {"library": "torch.distributed gloo", "seconds": 1.5, "allreduce": curve}
    probe = assemble(
        [measured | {"pairs": {"0-1": pair}}, measured | {"pairs": {}}], {0: "laptop", 1: "laptop"}
    )
    store.update_summary(run_id, probe=probe | {"seconds": 2.75, "run_id": run_id})
    return run_id


def documents(tmp_path: Path) -> dict[str, Any]:
    store = Store(tmp_path / "history.sqlite")
    try:
        run_id = record_a_run(store)
        history = History(store)
        none = Query({})
        try:
            history.run("no-such-run")
        except NotFound as exc:
            error = {"message": exc.message}
        else:
            raise AssertionError("an unknown run must be NotFound")
        _, stream, _ = read_slice(store, 0, run_id)
        _, nodes, _ = read_slice(store, 0, run_id, hosts=Hosts(store))
        docs: dict[str, Any] = {
            "version": dict(history.version(), version="0.0.0"),  # the version number varies
            "runs": history.runs(none),
            "run": history.run(run_id),
            "logs": history.logs(run_id, none),
            "metrics": history.metrics(run_id, none),
            "stacks": history.stacks(run_id, none),
            "display": history.display(run_id, str(_display_seq(store, run_id))),
            "stream": stream,
            "streamnodes": nodes,  # the same events batched per node (format=nodes)
            "error": error,
        }
        # A control needs a run that is still going: a second one, recorded after the reads.
        store.create_run(
            RunRecord("run-live", "local", 1, [0], cluster_id="cluster-wire", started=T0 + 10)
        )
        control = history.cancel("run-live")
        control["control"]["t"] = T0 + 11  # the time of the request varies
        docs["control"] = control
        store.append([RunEvent("run-live", T0 + 12, RunState.STOPPED, "")])
        docs["deleted"] = history.delete("run-live")
        return docs
    finally:
        store.close()


def _display_seq(store: Store, run_id: str) -> int:
    return next(line.seq for line in store.logs(run_id, stream="display"))


def render_json(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def render_ts(docs: dict[str, Any]) -> str:
    lines = [
        "// Generated by tests/python/test_wire.py from the documents in tests/wire/;",
        "// do not edit: run `make wire-fixtures`. The annotations make tsc check each",
        "// document against the panel's wire types (`npm run lint`).",
        "",
        "import type {",
        *(f"  {t}," for t in sorted(set(TYPES.values()))),
        "} from '../../labextension/src/wire';",
        "",
    ]
    for name, type_name in TYPES.items():
        body = json.dumps(docs[name], indent=2, sort_keys=True)
        lines.append(f"export const {name}: {type_name} = {body};")
        lines.append("")
    return "\n".join(lines)


def expected_files(tmp_path: Path) -> dict[Path, str]:
    docs = documents(tmp_path)
    files = {FIXTURES / f"{name}.json": render_json(docs[name]) for name in TYPES}
    files[TS_MODULE] = render_ts(docs)
    return files


def test_wire_fixtures_match_what_the_python_code_sends(tmp_path: Path) -> None:
    files = expected_files(tmp_path)
    if UPDATE:
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text)
    stale = [
        str(p.relative_to(ROOT))
        for p, text in files.items()
        if not p.exists() or p.read_text() != text
    ]
    assert not stale, f"wire fixtures are stale: {stale}; run `make wire-fixtures` and commit them"


def test_every_fixture_is_listed() -> None:
    on_disk = {p.stem for p in FIXTURES.glob("*.json")}
    assert on_disk == set(TYPES), "tests/wire/ holds a document that no test writes"


@pytest.mark.parametrize("state", list(RankState))
def test_rank_states_are_the_typed_ones(state: RankState) -> None:
    """The TypeScript union lists exactly the states Python emits."""
    wire_ts = (ROOT / "labextension" / "src" / "wire.ts").read_text()
    line = next(x for x in wire_ts.splitlines() if x.startswith("export type RankState ="))
    assert f"'{state.value}'" in line
    assert line.count("'") == 2 * len(RankState)


@pytest.mark.parametrize("state", list(RunState))
def test_run_states_are_the_typed_ones(state: RunState) -> None:
    """The TypeScript RunState union lists exactly the run states Python records."""
    wire_ts = (ROOT / "labextension" / "src" / "wire.ts").read_text()
    start = wire_ts.index("export type RunState =")
    union = wire_ts[start : wire_ts.index(";", start)]
    assert f"'{state.value}'" in union
    assert union.count("'") == 2 * len(RunState)


def test_an_events_json_text_is_what_json_dumps_writes_of_it() -> None:
    """The store writes an event's JSON with ``to_json_text`` (its hot path): the same text as
    ``json.dumps(event.to_json())``, escapes, non-ASCII text, NaN and absent fields included."""
    failure = RankFailure(3, 1.5, "hôst ☃", None, "ValueError", 'bad "x"\n\\ ☃')
    events = [
        RankEvent("r1", 0, 1764201234.123456, RankState.RUNNING, 'h"ost\\é', 1234),
        RankEvent("r1", 7, float("nan"), RankState.DONE, "h", None),
        RunEvent("r1", 0.1, RunState.COMPLETED, "message ☃"),
        ErrorEvent("r1", failure),
        MetricEvent("r1", 2, 3.0, {"loss": 0.25, "inf": float("inf")}),
        OutputEvent("r1", 1, 2.0, Stream.STDOUT, "a\nb\u2028c"),
    ]
    for event in events:
        assert event.to_json_text() == json.dumps(event.to_json())
