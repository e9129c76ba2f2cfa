"""A rank inside a SageMaker training container: the worker runtime without the control channel.

The job's code package holds ``job.json`` (cell, layout, names to pull) and ``push.bin`` (the
pushed values). Rank and world size come from the launcher (torchrun's or Open MPI's variables);
with no launcher, this process is the host's agent: it reads the container's resource
configuration and starts one child per local rank with torchrun-style variables.

Output leaves as tagged lines on stdout (``##jd|RANK|KIND|PAYLOAD``; output lines carry
their time: ``##jd|RANK|o|T|TEXT``), which SageMaker sends to
CloudWatch Logs; results go to the model directory, which SageMaker uploads to S3.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..spec import Layout
from .capture import FdCapture
from .protocol import Buffer
from .runtime import RankEnv, Runtime
from .strategies import setup

TAG = "##jd"
_LAUNCHER_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


def _dir(var: str, default: str) -> Path:
    return Path(os.environ.get(var, default))


class TaggedSink:
    """Writes one tagged line per output line, metric sample and result to the real stdout."""

    def __init__(self, rank: int, fd: int, results: Path) -> None:
        self.rank, self.fd, self.results = rank, fd, results
        self.status = "ok"
        self.failure: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def line(self, kind: str, payload: str) -> None:
        data = f"{TAG}|{self.rank}|{kind}|{payload}\n".encode("utf-8", "replace")
        with self._lock:
            while data:
                data = data[os.write(self.fd, data) :]

    def output(self, stream: str, lines: list[tuple[float, str]]) -> None:
        for t, text in lines:
            self.line("o" if stream == "stdout" else "e", f"{t:.3f}|{text}")

    def send(
        self,
        msg_type: str,
        fields: dict[str, Any] | None = None,
        buffers: list[Buffer] | tuple[Buffer, ...] = (),
    ) -> None:
        fields = fields or {}
        if msg_type == "metrics":
            for t, values in fields["samples"]:
                self.line("m", json.dumps([t, values]))
        elif msg_type == "state":
            self.line("s", str(fields["state"]))
        elif msg_type == "done":
            self.status = str(fields["status"])
            self.failure = fields.get("failure")
            self._write_results(fields, buffers)
            if fields.get("failure"):
                self.line("x", json.dumps(fields["failure"]))
            if fields.get("value") is not None:
                self.line("r", json.dumps(fields["value"]))
            self.line("d", self.status)

    def _write_results(self, fields: dict[str, Any], buffers: Any) -> None:
        self.results.mkdir(parents=True, exist_ok=True)
        (self.results / f"rank-{self.rank}.json").write_text(json.dumps(fields))
        with (self.results / f"rank-{self.rank}.pull").open("wb") as f:
            for frame in buffers:
                data = bytes(frame)
                f.write(struct.pack("<Q", len(data)))
                f.write(data)


def read_frames(path: Path) -> list[bytes]:
    """The frames that :class:`TaggedSink` wrote (the pickled pulled values)."""
    data, frames, i = path.read_bytes(), [], 0
    while i < len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        frames.append(data[i + 8 : i + 8 + n])
        i += 8 + n
    return frames


def _resource_config() -> dict[str, Any]:
    path = _dir("SM_INPUT_CONFIG_DIR", "/opt/ml/input/config") / "resourceconfig.json"
    try:
        return dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return {"current_host": "algo-1", "hosts": ["algo-1"]}


def _host_agent(root: Path, layout: Layout) -> int:
    """No launcher: start this host's ranks with torchrun-style variables, wait for them."""
    config = _resource_config()
    hosts = sorted(config["hosts"], key=lambda h: int(h.rsplit("-", 1)[-1]))
    node = hosts.index(config["current_host"])
    per_node = layout.procs_per_node
    base = {
        **os.environ,
        "WORLD_SIZE": str(layout.world_size),
        "LOCAL_WORLD_SIZE": str(per_node),
        "GROUP_RANK": str(node),
        "MASTER_ADDR": os.environ.get("MASTER_ADDR", hosts[0]),
        "MASTER_PORT": os.environ.get("MASTER_PORT", "29500"),
    }
    entry = [sys.executable, str(root / "jd_entry.py")]
    children = [
        subprocess.Popen(  # noqa: S603 (our own entry point)
            entry,
            cwd=root,
            env={**base, "RANK": str(node * per_node + local), "LOCAL_RANK": str(local)},
        )
        for local in range(per_node)
    ]
    codes = [child.wait() for child in children]
    return max(codes, key=abs)


def _flush_metrics(runtime: Runtime) -> None:
    while True:
        time.sleep(0.5)
        runtime.flush_metrics()


def main(root: str | os.PathLike[str]) -> int:
    root = Path(root)
    job = json.loads((root / "job.json").read_text())
    layout = Layout.from_json(job["layout"])
    if not any(name in os.environ for name in _LAUNCHER_VARS):
        if layout.procs_per_node > 1:
            return _host_agent(root, layout)
        config = _resource_config()
        hosts = sorted(config["hosts"], key=lambda h: int(h.rsplit("-", 1)[-1]))
        node = hosts.index(config["current_host"])
        os.environ.update(
            RANK=str(node),
            WORLD_SIZE=str(layout.world_size),
            LOCAL_RANK="0",
            LOCAL_WORLD_SIZE="1",
            GROUP_RANK=str(node),
        )
        os.environ.setdefault("MASTER_ADDR", hosts[0])
        os.environ.setdefault("MASTER_PORT", "29500")
    env = RankEnv.from_environ()
    env.export()
    results = _dir("SM_MODEL_DIR", "/opt/ml/model") / "jd"
    capture = FdCapture(lambda stream, lines: sink.output(stream, lines))
    capture.start()
    sink = TaggedSink(env.rank, capture.saved["stdout"], results)
    runtime = Runtime(env, send=sink.send)
    threading.Thread(target=_flush_metrics, args=(runtime,), daemon=True).start()
    try:
        setup(layout, runtime.namespace)
    except Exception as exc:  # noqa: BLE001 (any set-up failure ends the rank, with its reason)
        sink.line(
            "x",
            json.dumps(
                {
                    "rank": env.rank,
                    "t": time.time(),
                    "host": runtime.host,
                    "pid": os.getpid(),
                    "ename": type(exc).__name__,
                    "evalue": f"set-up failed: {exc}",
                    "traceback": [],
                    "kind": "exception",
                }
            ),
        )
        return _fail(sink, f"rank {env.rank}: set-up failed: {type(exc).__name__}: {exc}")
    push = root / "push.bin"
    buffers: list[Buffer] = [*read_frames(push)] if push.exists() else []
    header = {
        "type": "execute",
        "run_id": job["run_id"],
        "code": job["code"],
        "pull": job.get("pull", []),
    }
    runtime.execute(header, buffers, capture.sync)
    capture.sync()
    if sink.status != "ok":
        failure = sink.failure or {}
        return _fail(
            sink,
            f"rank {env.rank} raised {failure.get('ename', 'an error')}: "
            f"{failure.get('evalue', sink.status)}",
        )
    return 0


def _fail(sink: TaggedSink, message: str) -> int:
    """Leave SageMaker's FailureReason (``/opt/ml/output/failure``) and exit non-zero."""
    path = _dir("SM_OUTPUT_DIR", "/opt/ml/output") / "failure"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(message[:1000] + "\n")
    except OSError:
        pass
    sink.line("d", "error")
    return 1
