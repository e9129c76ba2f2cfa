"""Faults and hostile input around the history store and the server (issue 9: §1 the store's
transactions, §2 authorization, §4 the store, §6 integers on the REST side, §7 a dead kernel)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError, HTTPResponse
from tornado.simple_httpclient import HTTPStreamClosedError

from jupyter_distributed.errors import NotFound, StoreError
from jupyter_distributed.events import OutputEvent, RunState, Stream
from jupyter_distributed.history import storefile
from jupyter_distributed.history.store import STORE_ENV, RunRecord, Store
from jupyter_distributed.server import handlers

Fetch = Callable[..., Awaitable[HTTPResponse]]
API = ("jupyter-distributed", "api")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def add_run(store: Store, run_id: str, *, kernel_pid: int | None = None, lines: int = 0) -> None:
    store.create_run(
        RunRecord(
            id=run_id,
            backend="local",
            world_size=2,
            ranks=[0, 1],
            cluster_id=f"c-{run_id}",
            host=socket.gethostname(),
            kernel_pid=os.getpid() if kernel_pid is None else kernel_pid,
            started=time.time(),
        )
    )
    store.append(
        OutputEvent(run_id, i % 2, time.time(), Stream.STDOUT, f"line {i}") for i in range(lines)
    )


# -- §4 the store file ------------------------------------------------------------------------


def test_store_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new-dir" / "history.sqlite3"
    store = Store(path)
    add_run(store, "r1", lines=10)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        assert p.exists(), p
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    store.close()


def test_an_existing_world_readable_store_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    Store(path).close()
    path.chmod(0o644)
    Store(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "cause"),
    [(b"", "the file is empty"), (b"not a database at all\n" * 100, "not an SQLite database")],
)
def test_a_broken_store_gives_one_clear_error(tmp_path: Path, content: bytes, cause: str) -> None:
    path = tmp_path / "history.sqlite3"
    path.write_bytes(content)
    with pytest.raises(StoreError) as info:
        Store(path)
    message = str(info.value)
    assert str(path) in message and cause in message and "move it aside" in message
    assert path.read_bytes() == content  # left as it was for the user to inspect


def test_a_truncated_store_gives_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    store = Store(path)
    add_run(store, "r1", lines=20_000)
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])

    def read_all() -> None:
        reopened = Store(path)
        reopened.logs("r1", limit=50_000)
        reopened.runs()

    with pytest.raises(StoreError) as info:
        read_all()
    assert str(path) in str(info.value) and "move it aside" in str(info.value)


def test_invalid_utf8_in_a_row_does_not_break_reads(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    store = Store(path)
    add_run(store, "r1", lines=4)  # rank 0's two lines are one row: "line 0\nline 2"
    db = sqlite3.connect(path)
    # bytes that are not UTF-8 inside a row of lines, and as a row of its own
    db.execute(
        "UPDATE events SET text=CAST(X'6c696e6520300a6f6bfffe21' AS TEXT)"
        " WHERE text=CAST('line 0' || char(10) || 'line 2' AS TEXT)"
    )
    db.execute(
        "INSERT INTO events (seq, span, run, kind, rank, stream, t, text) VALUES"
        " ((SELECT MAX(seq) + 1 FROM events), 0, (SELECT key FROM run_keys WHERE id='r1'),"
        " (SELECT code FROM codes WHERE name='output'), 0,"
        " (SELECT code FROM codes WHERE name='stdout'), 1.0, CAST(X'6f6bfffe21' AS TEXT))"
    )
    assert db.total_changes == 2
    db.commit()
    db.close()
    texts = [line.text for line in store.logs("r1")]
    assert texts == ["line 0", "line 1", "ok\ufffd\ufffd!", "line 3", "ok\ufffd\ufffd!"]
    assert [line.text for line in store.logs("r1", search="OK")] == texts[2::2]
    assert store.events_after(0, "r1")[-1][1]["text"] == "ok\ufffd\ufffd!"
    store.close()


def test_readers_do_not_wait_for_the_writer(tmp_path: Path) -> None:
    """A reader thread has its own connection: a long write transaction does not stall it."""
    store = Store(tmp_path / "history.sqlite3")
    add_run(store, "r1", lines=100)
    in_tx, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store._tx():
            in_tx.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert in_tx.wait(5)
        got: list[int] = []
        reader = threading.Thread(target=lambda: got.append(len(store.logs("r1"))))
        reader.start()
        reader.join(5)
        assert got == [100], "the reader waited for the writer"
    finally:
        release.set()
        thread.join()
    store.close()


# -- §1 the store's transactions name the real error ---------------------------------------------


def test_a_locked_store_names_the_real_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storefile, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "history.sqlite3"
    store = Store(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError) as info:
            add_run(store, "r1")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert "database is locked" in str(info.value) and str(path) in str(info.value)
    assert "no transaction is active" not in str(info.value)
    add_run(store, "r2")  # the store still works afterwards
    assert store.run("r2") is not None
    store.close()


def test_a_full_store_names_the_real_error(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    store = Store(path)
    add_run(store, "r1")
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count={pages + 2}")

    def fill() -> None:
        for _ in range(100):
            store.append(OutputEvent("r1", 0, 1.0, Stream.STDOUT, "x" * 1000) for _ in range(50))

    with pytest.raises(StoreError) as info:
        fill()
    assert "database or disk is full" in str(info.value) and str(path) in str(info.value)
    store.close()


def test_not_found_is_its_own_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "history.sqlite3")
    with pytest.raises(NotFound, match="no run 'nope'"):
        store.request_control("nope", "cancel")
    store.close()


# -- §7 a kernel that died --------------------------------------------------------------------


def test_next_open_ends_the_runs_of_a_dead_kernel(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    store = Store(path)
    gone = dead_pid()
    add_run(store, "dead", kernel_pid=gone, lines=3)
    add_run(store, "alive")  # this process is its kernel
    store.close()
    store = Store(path)
    dead = store.run("dead")
    assert dead is not None and dead.state is RunState.FAILED and dead.ended is not None
    assert "kernel died" in dead.message and str(gone) in dead.message
    assert {r.state for r in store.ranks("dead")} == {"failed"}
    assert len(store.logs("dead")) == 3  # what it wrote is kept
    assert store.events_after(0, "dead")[-1][1]["state"] == "failed"  # the live stream sees it
    alive = store.run("alive")
    assert alive is not None and alive.state is RunState.RUNNING
    store.close()


def test_dead_kernels_push_files_and_cluster_dirs_are_swept(tmp_path: Path) -> None:
    import tempfile

    gone, mine = dead_pid(), os.getpid()
    shm = Path("/dev/shm")  # noqa: S108
    base = shm if shm.is_dir() else Path(tempfile.gettempdir())
    stale_file = base / f"jupyter-distributed-k{gone}-{'a' * 32}"
    live_file = base / f"jupyter-distributed-k{mine}-{'b' * 32}"
    stale_dir = Path(tempfile.mkdtemp(prefix=f"jupyter-distributed-k{gone}-"))
    (stale_dir / "rank-0.log").write_text("x")
    for f in (stale_file, live_file):
        f.write_bytes(b"x")
    try:
        Store(tmp_path / "history.sqlite3").close()
        assert not stale_file.exists() and not stale_dir.exists()
        assert live_file.exists()
    finally:
        live_file.unlink(missing_ok=True)


# -- the server ----------------------------------------------------------------------------------


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's store; list it before the server fixtures so the server reads it."""
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv(STORE_ENV, str(path))
    return path


class DenyAll(Authorizer):
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return False


class ReadOnly(Authorizer):
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read"


def _server(authorizer: type[Authorizer] | None) -> dict[str, Any]:
    config: dict[str, Any] = {"jpserver_extensions": {"jupyter_distributed": True}}
    if authorizer is not None:
        config["authorizer_class"] = authorizer
    return {"ServerApp": config}


GETS = [
    ("version",), ("runs",), ("runs", "r1"), ("runs", "r1", "logs"), ("runs", "r1", "metrics"),
    ("runs", "r1", "stacks"),
]  # fmt: skip
POSTS = [("runs", "r1", "cancel"), ("clusters", "c-r1", "stop"), ("runs", "r1", "stacks")]


async def _code(fetch: Fetch, *path: str, method: str = "GET", **params: Any) -> int:
    body = b"" if method == "POST" else None
    try:
        response = await fetch(*API, *path, method=method, body=body, params=params)
    except HTTPClientError as exc:
        return exc.code
    return response.code


@pytest.mark.parametrize("jp_server_config", [_server(DenyAll)])
async def test_deny_all_authorizer_refuses_every_route(
    store_path: Path, jp_fetch: Fetch, jp_ws_fetch: Any
) -> None:
    add_run(Store(store_path), "r1")
    for path in [*GETS, ("runs", "r1", "displays", "1")]:
        assert await _code(jp_fetch, *path) == 403, path
    assert await _code(jp_fetch, "events", request_timeout=10) == 403
    for path in POSTS:
        assert await _code(jp_fetch, *path, method="POST") == 403, path
    with pytest.raises(HTTPClientError) as info:
        await jp_ws_fetch(*API, "stream")
    assert info.value.code == 403
    assert not Store(store_path)._query("SELECT * FROM controls")  # nothing was queued


@pytest.mark.parametrize("jp_server_config", [_server(ReadOnly)])
async def test_read_only_authorizer_reads_but_cannot_cancel_or_stop(
    store_path: Path, jp_fetch: Fetch, jp_ws_fetch: Any
) -> None:
    add_run(Store(store_path), "r1")
    for path in GETS:
        assert await _code(jp_fetch, *path) == 200, path
    for path in POSTS:
        assert await _code(jp_fetch, *path, method="POST") == 403, path
    ws = await jp_ws_fetch(*API, "stream", params={"after": "0"})
    message = json.loads(await asyncio.wait_for(ws.read_message(), 10))
    assert message["events"][0]["event"]["kind"] == "run"
    ws.close()


@pytest.fixture
def broken_store(store_path: Path) -> Path:
    store_path.write_bytes(b"garbage, not SQLite\n" * 50)
    return store_path


@pytest.mark.parametrize("jp_server_config", [_server(None)])
async def test_a_broken_store_answers_503_with_what_to_do(
    broken_store: Path, jp_fetch: Fetch, jp_ws_fetch: Any
) -> None:
    store_path = broken_store
    for path in GETS[1:3]:
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch(*API, *path)
        assert info.value.code == 503, path
        body = json.loads(info.value.response.body)  # type: ignore[union-attr]
        assert str(store_path) in body["message"] and "move it aside" in body["message"]
    assert await _code(jp_fetch, "version") == 200  # the extension itself loaded
    assert await _code(jp_fetch, "events") == 503
    with pytest.raises(HTTPClientError) as ws_info:
        await jp_ws_fetch(*API, "stream")
    assert ws_info.value.code == 503


@pytest.mark.parametrize("jp_server_config", [_server(None)])
async def test_integers_beyond_64_bits_are_bad_requests(
    store_path: Path, jp_fetch: Fetch, jp_ws_fetch: Any
) -> None:
    add_run(Store(store_path), "r1", lines=3)
    huge = str(2**63)
    cases: list[tuple[tuple[str, ...], dict[str, str]]] = [
        (("runs",), {"limit": huge}),
        (("runs",), {"before": "1e400"}),
        (("runs",), {"before": "nan"}),
        (("runs", "r1", "logs"), {"after": huge}),
        (("runs", "r1", "logs"), {"before": huge}),
        (("runs", "r1", "logs"), {"rank": huge}),
        (("runs", "r1", "logs"), {"rank": f"0,-{huge}"}),
        (("runs", "r1", "metrics"), {"after": huge}),
        (("events",), {"after": huge}),
    ]
    for path, params in cases:
        assert await _code(jp_fetch, *path, **params) == 400, (path, params)
    with pytest.raises(HTTPClientError) as info:
        await jp_ws_fetch(*API, "stream", params={"after": huge})
    assert info.value.code == 400
    big = str(2**62)  # the routes' bound (a cursor is widened by a row's span before SQLite)
    assert await _code(jp_fetch, "runs", "r1", "logs", after=big) == 200


@pytest.mark.parametrize("jp_server_config", [_server(None)])
async def test_sse_sends_headers_at_once_and_keep_alives(
    store_path: Path, jp_fetch: Fetch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handlers, "KEEPALIVE", 0.2)
    Store(store_path).close()
    chunks: list[str] = []
    headers: list[str] = []

    class Enough(Exception):
        pass

    def chunk(data: bytes) -> None:
        chunks.append(data.decode())
        if sum(c.count(": keep-alive") for c in chunks) >= 2:
            raise Enough

    started = time.monotonic()
    with contextlib.suppress(Enough, HTTPStreamClosedError):
        await jp_fetch(
            *API,
            "events",
            streaming_callback=chunk,
            header_callback=headers.append,
            request_timeout=10,
        )
    assert any("text/event-stream" in h for h in headers)
    assert chunks[0].startswith(": connected")
    assert time.monotonic() - started < 5  # no event was ever written: only comments


@pytest.mark.parametrize("jp_server_config", [_server(None)])
async def test_server_ends_runs_of_a_kernel_that_dies_while_it_serves(
    store_path: Path, jp_fetch: Fetch
) -> None:
    add_run(Store(store_path), "r1", kernel_pid=dead_pid())
    deadline = time.monotonic() + 15
    state = ""
    while time.monotonic() < deadline:
        response = await jp_fetch(*API, "runs", "r1")
        run = json.loads(response.body)["run"]
        state = run["state"]
        if state == "failed":
            assert "kernel died" in run["message"]
            break
        await asyncio.sleep(0.2)
    assert state == "failed"


# -- §5 SageMaker results ------------------------------------------------------------------------


class _Boom:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, ("touch should-never-run",))


def _artifacts(fields: dict[str, Any], pulled: bytes) -> Any:
    import io
    import tarfile

    blob = io.BytesIO()
    with tarfile.open(fileobj=blob, mode="w:gz") as tar:
        for name, data in {
            "jd/rank-0.json": json.dumps(fields).encode(),
            "jd/rank-0.pull": pulled,
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    class S3:
        class exceptions:
            NoSuchKey = KeyError

        def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
            return {"Body": io.BytesIO(blob.getvalue())}

    return S3()


@pytest.mark.parametrize(
    "case", ["tampered", "unsigned", "no local key", "server", "signed, not opted in"]
)
def test_sagemaker_results_load_only_when_signed_with_our_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """A hostile pickle in the job's S3 output is never loaded: not by the server (it never
    unpickles), not by a kernel that did not opt into pickles (--trust-pickle) even when signed
    with the run's key, and with the opt-in not unless the HMAC verifies with its own key."""
    import pickle
    import struct

    from jupyter_distributed.backends.sagemaker import resultkey
    from jupyter_distributed.backends.sagemaker.follow import JobStatus
    from jupyter_distributed.backends.sagemaker.results import Load, outcome

    store_path = tmp_path / "history.sqlite3"
    key = bytes.fromhex(resultkey.new_key(store_path, "run-1"))
    keyfile = tmp_path / "result-keys" / "run-1"
    assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600
    assert stat.S_IMODE(keyfile.parent.stat().st_mode) == 0o700
    good = pickle.dumps({"x": 41})
    evil = pickle.dumps(_Boom())
    framed = struct.pack("<Q", len(good)) + good
    status = JobStatus("Completed", "Completed", model_artifacts="s3://bucket/out/model.tar.gz")
    monkeypatch.chdir(tmp_path)

    signed = {"value": "1", "pull_hmac": resultkey.sign(key, framed)}
    result = outcome(status, _artifacts(signed, framed), (0,), [], False, key, "pickle")
    assert result.pulled == {0: {"x": 41}}  # the genuine results load, with --trust-pickle

    evil_framed = struct.pack("<Q", len(evil)) + evil
    fields = {"value": "1", "pull_hmac": signed["pull_hmac"]}
    local_key: bytes | None = key
    load: Load = "pickle"
    if case == "unsigned":
        fields = {"value": "1"}
    elif case == "no local key":
        fields = {"value": "1", "pull_hmac": resultkey.sign(b"attacker", evil_framed)}
        local_key = resultkey.load_key(store_path, "another-run")
    elif case == "server":
        fields, load = {"value": "1", "pull_hmac": resultkey.sign(key, evil_framed)}, "none"
    elif case == "signed, not opted in":
        fields, load = {"value": "1", "pull_hmac": resultkey.sign(key, evil_framed)}, "data"
    result = outcome(status, _artifacts(fields, evil_framed), (0,), [], False, local_key, load)
    assert result.values == {0: "1"} and result.pulled == {}
    assert not (tmp_path / "should-never-run").exists()
    if load == "pickle":
        assert "integrity check" in result.pull_errors[0]["*"]
    elif load == "data":
        assert "a pickle, which could run code" in result.pull_errors[0]["*"]


def test_a_stopped_local_cluster_leaves_no_directory() -> None:
    """The directory of the ranks' start-up logs is named after the kernel (swept if it dies)
    and removed when the cluster stops."""
    import dataclasses

    from jupyter_distributed.backends.local.backend import LocalBackend, LocalProcesses
    from jupyter_distributed.layout import Layout
    from jupyter_distributed.spec import Spec

    plan = LocalBackend().plan(Spec(layout=Layout(procs_per_node=2)))
    sleeper = (sys.executable, "-c", "import time; time.sleep(30)")
    processes = LocalProcesses(dataclasses.replace(plan, command=sleeper), {})
    assert processes.logdir.name.startswith(f"jupyter-distributed-k{os.getpid()}-")
    assert processes.logdir.is_dir()
    processes.terminate(0.5)
    assert not processes.running()
    assert not processes.logdir.exists()


# -- in a real kernel ------------------------------------------------------------------------------


def _kernel(env_store: Path) -> Any:
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, STORE_ENV: str(env_store)})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def _run(kc: Any, code: str) -> dict[str, Any]:
    reply: dict[str, Any] = kc.execute_interactive(code, timeout=120, output_hook=lambda m: None)
    return dict(reply["content"])


@pytest.mark.timeout(300)
def test_kernel_broken_store_then_killed_kernel(tmp_path: Path) -> None:
    """A broken store is one clear line in the cell; a SIGKILLed kernel's run is ended by the
    next store open, and its cluster directory is swept."""
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"\0" * 4096)
    km, kc = _kernel(broken)
    try:
        reply = _run(kc, "%load_ext jupyter_distributed\n%distributed runs")
        assert reply["status"] == "error" and reply["ename"] in ("StoreError", "UsageError")
        assert str(broken) in reply["evalue"] and "move it aside" in reply["evalue"]
        assert len(reply["traceback"]) <= 2
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    path = tmp_path / "history.sqlite3"
    km, kc = _kernel(path)
    try:
        _run(kc, "%load_ext jupyter_distributed")
        kc.execute("%%distributed -n 1\nimport time\nprint('started', flush=True)\ntime.sleep(15)")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lines = [line.text for run in Store(path).runs() for line in Store(path).logs(run.id)]
            if "started" in lines:
                break
            time.sleep(0.2)
        kernel_pid = km.provisioner.process.pid
        os.kill(kernel_pid, 9)
        km.provisioner.process.wait()
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    (run,) = Store(path).runs()  # the next open: the kernel is gone
    assert run.state is RunState.FAILED and "kernel died" in run.message
    assert not list(Path(tempfile_dir()).glob(f"jupyter-distributed-k{kernel_pid}-*"))


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()
