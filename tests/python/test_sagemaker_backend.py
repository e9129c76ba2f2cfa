"""A cell as a SageMaker training job, end to end, against moto's server on 127.0.0.1 and the
local platform in ``sagemaker_runtime`` (real packaged runtime in real processes)."""

from __future__ import annotations

import io
import json
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.sagemaker.aws import Clients
from jupyter_distributed.backends.sagemaker.backend import SageMakerBackend
from jupyter_distributed.backends.sagemaker.lifecycle import attach, cancel, release
from jupyter_distributed.backends.sagemaker.options import SageMakerOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.events import OutputEvent, RunState
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout, Strategy
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .sagemaker_fixtures import ACCESS_KEY, BUCKET, IMAGE, ROLE, SECRET_KEY, context
from .sagemaker_runtime import LocalSageMaker


def _spec(layout: Layout, **options: Any) -> Spec:
    pull = options.pop("pull", ())
    push = options.pop("push", ())
    return Spec(
        layout=layout,
        backend="sagemaker",
        options=SageMakerOptions(**options),
        pull=pull,
        push=push,
    )


class Recorder(CellView):
    def __init__(self) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        super().__init__(out=self.out, err=self.err)
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)
        super().on_event(event)


CELL = """
import os
print(f"hello from {rank} of {world_size} on {os.environ['SM_CURRENT_HOST']}")
for step in range(3):
    report(step=step, loss=1.0 / (step + 1 + rank))
x = rank * 10 + offset
x
"""


def test_cell_runs_as_job_with_live_rank_lines_metrics_pull_and_value(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    session = Session(Store(tmp_path / "h.sqlite3"))
    ns: dict[str, Any] = {"offset": 1}
    view = Recorder()
    spec = _spec(Layout(nodes=2, procs_per_node=2), pull=("x",), push=("offset",))
    outcome = session.run_cell(spec, CELL, ns, view=view)
    assert outcome.state is RunState.COMPLETED
    assert ns["x"] == [1, 11, 21, 31]
    assert outcome.values == {r: str(r * 10 + 1) for r in range(4)}
    text = view.out.getvalue()
    for r in range(4):
        host = f"algo-{r // 2 + 1}"
        assert f"[rank {r}] hello from {r} of 4 on {host}" in text
        assert f"Out[rank {r}]: {r * 10 + 1}" in text
    notices = view.err.getvalue()
    assert "Training" in notices and "Completed" in notices
    run = session.store.runs(limit=1)[0]
    assert run.external_id.startswith("jd-") and run.state is RunState.COMPLETED
    assert run.summary["sagemaker"]["status"] == "Completed"
    progress = [d.get("message", "") for _, d in session.store.events_after(0, run.id)]
    assert any("Training" in m for m in progress)
    logs = session.store.logs(run.id)
    assert {line.rank for line in logs} == {0, 1, 2, 3}
    metrics = [m for _, m in session.store.metrics(run.id)]
    assert any(m.rank == 3 and m.values.get("loss") == pytest.approx(0.25) for m in metrics)
    request = configured.requests[-1]
    assert json.loads(request["HyperParameters"]["sagemaker_mpi_enabled"]) is True
    # The package went to S3 encrypted.
    key = f"jupyter-distributed/{run.external_id}/source/sourcedir.tar.gz"
    head = configured.s3.head_object(Bucket=BUCKET, Key=key)
    assert head["ServerSideEncryption"] == "AES256"


def test_host_agent_without_launcher(configured: LocalSageMaker, tmp_path: Path) -> None:
    session = Session(Store(tmp_path / "h.sqlite3"))
    view = Recorder()
    spec = _spec(Layout(nodes=2, procs_per_node=1, strategy=Strategy.PARAMETER_SERVER), pull=("r",))
    ns: dict[str, Any] = {}
    session.run_cell(
        spec, "r = (rank, world_size, node_rank)\nprint('ps' if rank == 0 else 'w')", ns, view=view
    )
    assert ns["r"] == [(0, 2, 0), (1, 2, 1)]
    assert "[rank 0] ps" in view.out.getvalue() and "[rank 1] w" in view.out.getvalue()


def test_remote_exception_reraised_with_rank_and_traceback(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    session = Session(Store(tmp_path / "h.sqlite3"))
    view = Recorder()
    code = (
        "def f():\n    raise ValueError(f'bad shard {rank}')\nif rank == 1:\n    f()\nprint('ok')"
    )
    with pytest.raises(RunFailed) as info:
        session.run_cell(_spec(Layout(nodes=2, procs_per_node=1)), code, {}, view=view)
    failure = info.value.failures[0]
    assert failure.rank == 1 and failure.ename == "ValueError"
    assert failure.evalue == "bad shard 1"
    assert any("f()" in line for line in failure.traceback)
    run = session.store.runs(limit=1)[0]
    job = configured.jobs[run.external_id].fake
    assert job.training_job_status == "Failed"
    assert "rank 1 raised ValueError: bad shard 1" in job.failure_reason
    assert "[rank 0] ok" in view.out.getvalue()


def test_stop_button_stops_the_job(configured: LocalSageMaker, tmp_path: Path) -> None:
    session = Session(Store(tmp_path / "h.sqlite3"))
    main: int = threading.main_thread().ident or 0

    class Interrupting(Recorder):
        sent = False

        def on_event(self, event: Any) -> None:
            super().on_event(event)
            if isinstance(event, OutputEvent) and "started" in event.text and not self.sent:
                self.sent = True
                signal.pthread_kill(main, signal.SIGINT)

    view = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        session.run_cell(
            _spec(Layout(nodes=1, procs_per_node=1)),
            "import time\nprint('started', flush=True)\ntime.sleep(120)",
            {},
            view=view,
        )
    run = session.store.runs(limit=1)[0]
    assert configured.jobs[run.external_id].fake.training_job_status == "Stopped"
    assert "StopTrainingJob" in view.err.getvalue()


def test_no_wait_then_attach_after_restart(configured: LocalSageMaker, tmp_path: Path) -> None:
    store_path = tmp_path / "h.sqlite3"
    view = Recorder()
    spec = _spec(Layout(nodes=2, procs_per_node=1), pull=("y",), wait=False)
    outcome = Session(Store(store_path)).run_cell(
        spec, "y = rank + 100\nprint('done', rank)", {}, view=view
    )
    assert outcome.state is RunState.RUNNING
    assert "%distributed attach jd-" in view.err.getvalue()
    # "Kernel restart": a new session and store object; the job kept running meanwhile.
    store = Store(store_path)
    job_name = store.runs(limit=1)[0].external_id
    ns: dict[str, Any] = {}
    later = Recorder()
    result = attach(context(store, later, ns), job_name)
    assert result.state is RunState.COMPLETED
    assert ns["y"] == [100, 101]
    assert "[rank 1] done 1" in later.out.getvalue()
    assert store.runs(limit=1)[0].state is RunState.COMPLETED
    lines = len(store.logs(store.runs(limit=1)[0].id))
    attach(context(store, Recorder(), ns), job_name)  # again: nothing recorded twice
    assert len(store.logs(store.runs(limit=1)[0].id)) == lines == 2


def test_cancel_and_warm_pool_release(configured: LocalSageMaker, tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    session = Session(store)
    session.run_cell(
        _spec(Layout(), wait=False), "import time\ntime.sleep(120)", {}, view=Recorder()
    )
    run = store.runs(limit=1)[0]
    assert cancel(store, run.id).startswith(f"stopping {run.external_id}")
    job = configured.jobs[run.external_id]
    deadline = time.monotonic() + 60
    while job.fake.training_job_status != "Stopped" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert job.fake.training_job_status == "Stopped"

    view = Recorder()
    session.run_cell(_spec(Layout(), keep_alive=600), "1", {}, view=view)
    assert "warm pool: Available" in view.err.getvalue()
    assert release(store).startswith("released the warm pool of jd-")
    assert "keeps no warm pool (Terminated)" in release(store)


def test_credentials_never_leave_the_kernel(configured: LocalSageMaker, tmp_path: Path) -> None:
    store_path = tmp_path / "h.sqlite3"
    session = Session(Store(store_path))
    session.run_cell(
        _spec(Layout(nodes=1, procs_per_node=2)),
        "import os\nprint(sorted(os.environ))",
        {},
        view=Recorder(),
    )
    run = session.store.runs(limit=1)[0]
    request = json.dumps(configured.requests[-1])
    logs = "\n".join(line.text for line in session.store.logs(run.id))
    package = configured.s3.get_object(
        Bucket=BUCKET, Key=f"jupyter-distributed/{run.external_id}/source/sourcedir.tar.gz"
    )
    blobs = [
        request,
        logs,
        store_path.read_bytes().decode("latin-1"),
        package["Body"].read().decode("latin-1"),
    ]
    for blob in blobs:
        assert ACCESS_KEY not in blob and SECRET_KEY not in blob
    assert "AWS_SECRET_ACCESS_KEY" not in logs


def test_dry_run_prints_the_request_and_creates_nothing(configured: LocalSageMaker) -> None:
    before = len(configured.requests)
    plan = SageMakerBackend().plan(_spec(Layout(nodes=2), job_name="my-job"))
    request = json.loads(plan.render())
    assert request["TrainingJobName"] == "my-job"
    assert request["RoleArn"] == ROLE
    assert request["AlgorithmSpecification"]["TrainingImage"] == IMAGE
    assert len(configured.requests) == before


def test_existing_job_name_refused(configured: LocalSageMaker, tmp_path: Path) -> None:
    from jupyter_distributed.errors import LaunchError

    session = Session(Store(tmp_path / "h.sqlite3"))
    session.run_cell(_spec(Layout(), job_name="jd-fixed-name"), "1", {}, view=Recorder())
    with pytest.raises(LaunchError, match="jd-fixed-name already exists"):
        session.run_cell(
            _spec(Layout(), job_name="jd-fixed-name", max_run=100), "1", {}, view=Recorder()
        )


def test_clients_are_constructor_parameters(configured: LocalSageMaker) -> None:
    clients = Clients(configured.client("sagemaker"), configured.s3, configured.logs)
    assert SageMakerBackend(clients=clients).clients is clients


def test_aws_errors_are_one_line(configured: LocalSageMaker, tmp_path: Path) -> None:
    from jupyter_distributed.errors import LaunchError

    session = Session(Store(tmp_path / "h.sqlite3"))
    with pytest.raises(LaunchError, match="NoSuchBucket") as info:
        session.run_cell(_spec(Layout(), bucket="no-such-bucket-here"), "1", {}, view=Recorder())
    assert "\n" not in str(info.value)


def test_log_tail_never_reads_another_jobs_streams(configured: LocalSageMaker) -> None:
    from jupyter_distributed.backends.sagemaker.follow import LOG_GROUP, LogTail

    logs = configured.logs
    for stream, text in (("jd-tail/algo-1-1", "mine"), ("jd-tail-2/algo-1-1", "other")):
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        logs.put_log_events(
            logGroupName=LOG_GROUP,
            logStreamName=stream,
            logEvents=[{"timestamp": int(time.time() * 1000), "message": text}],
        )
    tail = LogTail(logs, "jd-tail")
    assert [(h, m) for h, _, m in tail.poll()] == [("algo-1", "mine")]
    assert tail.poll() == []  # the forward token remembers where it was


def test_input_channel_sharded_by_key(configured: LocalSageMaker, tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        configured.s3.put_object(Bucket=BUCKET, Key=f"shards/{name}", Body=name.encode())
    session = Session(Store(tmp_path / "h.sqlite3"))
    ns: dict[str, Any] = {}
    spec = _spec(
        Layout(nodes=2),
        inputs=(("train", f"s3://{BUCKET}/shards"),),
        shard_by_key=True,
        pull=("files",),
    )
    code = "import os\nfiles = sorted(os.listdir(os.environ['SM_CHANNEL_TRAIN']))"
    session.run_cell(spec, code, ns, view=Recorder())
    assert ns["files"] == [["a.txt", "c.txt"], ["b.txt", "d.txt"]]
    channel = configured.requests[-1]["InputDataConfig"][0]["DataSource"]["S3DataSource"]
    assert channel["S3DataDistributionType"] == "ShardedByS3Key"


def test_sweep_is_one_job_per_combination_with_its_hyperparameters(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    from jupyter_distributed.sweeps import parse_sweep

    session = Session(Store(tmp_path / "h.sqlite3"))
    ns: dict[str, Any] = {}
    spec = replace(
        _spec(Layout(nodes=1, procs_per_node=1), pull=("y",)),
        sweep=parse_sweep(["lr=0.1,0.2", "opt='adam',sgd"], 2),
    )
    outcome = session.run_sweep(spec, "y = (lr, opt, rank)", ns)
    assert [r.state for r in outcome.results] == [RunState.COMPLETED] * 4
    assert ns["y"] == {(lr, opt): [(lr, opt, 0)] for lr in (0.1, 0.2) for opt in ("adam", "sgd")}
    sm = configured.client("sagemaker")
    runs = session.store.runs(sweep_id=outcome.sweep_id)
    assert len(runs) == 4 and len({r.external_id for r in runs}) == 4
    for run in runs:
        hp = sm.describe_training_job(TrainingJobName=run.external_id)["HyperParameters"]
        assert {"lr": hp["lr"], "opt": hp["opt"]} == {
            k: json.dumps(v) for k, v in run.summary["sweep"].items()
        }


def test_pulled_values_come_back_as_data(configured: LocalSageMaker, tmp_path: Path) -> None:
    """The normal path with results as data (no pickle): ints, strings, dicts, lists, tuples,
    NumPy arrays and scalars; a value that is not data is named, with the opt-in."""
    import numpy as np

    session = Session(Store(tmp_path / "h.sqlite3"))
    ns: dict[str, Any] = {}
    view = Recorder()
    code = (
        "import numpy as np\n"
        "i, s = rank + 1, f'rank {rank}'\n"
        "d = {'rank': rank, 'losses': [0.5, None], (1, 2): b'raw'}\n"
        "a = np.arange(6, dtype=np.float32).reshape(2, 3) * (rank + 1)\n"
        "n = np.int64(7)\n"
        "f = lambda: 1\n"
    )
    spec = _spec(Layout(nodes=2, procs_per_node=1), pull=("i", "s", "d", "a", "n", "f"))
    session.run_cell(spec, code, ns, view=view)
    assert ns["i"] == [1, 2] and ns["s"] == ["rank 0", "rank 1"]
    assert ns["d"] == [{"rank": r, "losses": [0.5, None], (1, 2): b"raw"} for r in (0, 1)]
    for r, array in enumerate(ns["a"]):
        assert array.dtype == np.float32
        np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3) * (r + 1))
    assert ns["n"] == [7, 7] and isinstance(ns["n"][0], np.int64)
    assert "f" not in ns
    assert "--pull f: not set" in view.err.getvalue()
    assert "--trust-pickle" in view.err.getvalue()


def test_a_forged_result_signed_with_the_described_key_runs_no_code(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    """M1: whoever reads the job's description (its environment holds the result key) and can
    write its S3 output signs a pickle; the kernel refuses it in one line and runs nothing."""
    import hashlib
    import hmac
    import tarfile

    from jupyter_distributed.protocol.frames import pack_frames

    store = Store(tmp_path / "h.sqlite3")
    session = Session(store)
    session.run_cell(_spec(Layout(nodes=2), pull=("x",)), "x = 1", {}, view=Recorder())
    job_name = store.runs(limit=1)[0].external_id
    described = configured.client("sagemaker").describe_training_job(TrainingJobName=job_name)
    # AWS's DescribeTrainingJob returns the request's Environment; moto leaves it out, so the
    # test reads it from the request the local platform received (the same dict).
    sent = next(r for r in configured.requests if r["TrainingJobName"] == job_name)
    key = bytes.fromhex(described.get("Environment", sent["Environment"])["JD_RESULT_KEY"])
    marker = tmp_path / "the-forged-pickle-ran"

    class Forged:
        def __reduce__(self) -> tuple[Any, ...]:
            return (open, (str(marker), "w"))

    import pickle

    pulled = pack_frames([pickle.dumps({"x": Forged()})])
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for fmt in ("pickle", "data"):  # what the job's header says does not matter
            header = {"status": "ok", "value": "1", "pull_format": fmt}
            header["pull_hmac"] = hmac.new(key, pulled, hashlib.sha256).hexdigest()
            rank = 0 if fmt == "pickle" else 1
            for name, data in (
                (f"jd/rank-{rank}.json", json.dumps(header).encode()),
                (f"jd/rank-{rank}.pull", pulled),
            ):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    bucket, _, s3_key = described["ModelArtifacts"]["S3ModelArtifacts"][5:].partition("/")
    configured.s3.put_object(Bucket=bucket, Key=s3_key, Body=out.getvalue())
    ns: dict[str, Any] = {}
    view = Recorder()
    assert attach(context(store, view, ns), job_name).state is RunState.COMPLETED
    assert not marker.exists() and "x" not in ns
    said = [line for line in view.err.getvalue().splitlines() if "--pull x" in line]
    assert len(said) == 1, said
    assert "rank 0: not loaded: the results in S3 are a pickle, which could run code" in said[0]
    assert "rank 1: not loaded: the results in S3 are not data this kernel reads" in said[0]


def test_trust_pickle_opts_into_any_picklable_value(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    from fractions import Fraction

    session = Session(Store(tmp_path / "h.sqlite3"))
    ns: dict[str, Any] = {}
    spec = _spec(Layout(), pull=("q",), trust_pickle=True)
    session.run_cell(
        spec, "from fractions import Fraction\nq = Fraction(1, 3)", ns, view=Recorder()
    )
    assert ns["q"] == [Fraction(1, 3)]
