"""A rank inside a SageMaker training container: the worker runtime without the control channel.

The job's code package holds ``job.json`` (cell, layout, names to pull) and ``push.bin`` (the
pushed values). Rank and world size come from the launcher (torchrun's or Open MPI's variables);
with no launcher, this process is the host's agent: it reads the container's resource
configuration and starts one child per local rank with torchrun-style variables.

Output leaves as tagged lines on stdout (:mod:`..protocol.tagged`), which SageMaker sends to
CloudWatch Logs; results go to the model directory, which SageMaker uploads to S3. Pulled values
go as data (:mod:`..protocol.datavalues`), or as a pickle when the job's ``pull_format`` says so
(``--trust-pickle``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..layout import Layout
from ..protocol import datavalues, tagged
from ..protocol.bundles import mark
from ..protocol.commands import Execute
from ..protocol.frames import pack_frames, unpack_frames
from ..protocol.metrics import Sample, bad_metric_message, numeric
from ..protocol.reports import ClearOutput, Display, Done, Live
from ..protocol.signing import Buffer
from .capture import FdCapture
from .rankenv import RankEnv
from .runtime import Runtime
from .strategies import setup

_LAUNCHER_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


def _dir(var: str, default: str) -> Path:
    return Path(os.environ.get(var, default))


class TaggedReporter:
    """The :class:`~.report.Reporter` of a rank without a channel: one tagged line per output
    line, metric sample and result on the real stdout; pulled values to the results folder."""

    def __init__(self, rank: int, fd: int, results: Path, pull_format: str) -> None:
        self.rank, self.fd, self.results = rank, fd, results
        self.pull_format = pull_format  # "data" or "pickle": the kernel reads the field
        self.status = "ok"
        self.failure: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._bad_metric_warned = False

    def line(self, tag: tagged.Tag, payload: str) -> None:
        self._write(tagged.encode(self.rank, tag, payload))

    def _write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8", "replace")
        with self._lock:
            while data:
                data = data[os.write(self.fd, data) :]

    def output(self, run_id: str, stream: str, lines: list[tuple[float, str]]) -> None:
        for t, text in lines:
            self._write(tagged.encode_output(self.rank, stream, t, text))

    def live(self, message: Live) -> None:
        """CloudWatch keeps lines: only a redrawn line's final state."""
        if message.final:
            self.output(message.run_id, message.stream, [(time.time(), message.text)])

    def display(self, message: Display) -> None:
        """A rich display as text: its plain form, or its mark (a result comes with done)."""
        if message.result:
            return
        text = message.data.get("text/plain")
        shown = text if isinstance(text, str) and len(message.data) == 1 else mark(message.data)
        self.output(message.run_id, "stdout", [(time.time(), shown)])

    def clear(self, message: ClearOutput) -> None:
        """CloudWatch keeps lines: nothing to clear."""

    def state(self, run_id: str, state: str) -> None:
        self.line(tagged.Tag.STATE, state)

    def metrics(self, run_id: str, samples: list[Sample]) -> None:
        for t, raw in samples:
            values, bad = numeric(raw)
            if bad and not self._bad_metric_warned:
                self._bad_metric_warned = True
                sys.stderr.write(bad_metric_message(*bad[0]) + "\n")
            if values:
                self.line(tagged.Tag.METRIC, json.dumps([t, values]))

    def done(self, done: Done, buffers: Sequence[Buffer]) -> None:
        self.status, self.failure = done.status, done.failure
        self.results.mkdir(parents=True, exist_ok=True)
        header = done.to_header()
        header["pull_format"] = self.pull_format
        pulled = pack_frames(buffers)
        key = os.environ.get("JD_RESULT_KEY", "")  # resultkey.KEY_ENV: the kernel checks it
        if key:
            header["pull_hmac"] = hmac.new(bytes.fromhex(key), pulled, hashlib.sha256).hexdigest()
        (self.results / f"rank-{self.rank}.json").write_text(json.dumps(header))
        (self.results / f"rank-{self.rank}.pull").write_bytes(pulled)
        if done.failure:
            self.line(tagged.Tag.FAILURE, json.dumps(done.failure))
        if done.value is not None:
            self.line(tagged.Tag.RESULT, json.dumps(done.value))
        self.line(tagged.Tag.DONE, self.status)

    def fatal(self, message: str) -> None:
        self.line(tagged.Tag.DONE, "error")


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
    capture = FdCapture(
        lambda stream, lines: sink.output("", stream, lines),
        lambda stream, text, final: sink.live(Live("", stream, text, final)),
    )
    capture.start()
    pull_format = job.get("pull_format", datavalues.FORMAT)
    sink = TaggedReporter(env.rank, capture.saved["stdout"], results, pull_format)
    runtime = Runtime(env, sink)
    if pull_format == datavalues.FORMAT:
        runtime.encode_pull = datavalues.encode
    threading.Thread(target=_flush_metrics, args=(runtime,), daemon=True).start()
    try:
        setup(layout, runtime.namespace)
    except Exception as exc:  # noqa: BLE001 (any set-up failure ends the rank, with its reason)
        sink.line(
            tagged.Tag.FAILURE,
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
    buffers: list[Buffer] = [*unpack_frames(push.read_bytes())] if push.exists() else []
    command = Execute(job["run_id"], job["code"], tuple(job.get("pull", ())))
    runtime.execute(command, buffers, capture.sync)
    capture.sync()
    if sink.status != "ok":
        failure = sink.failure or {}
        return _fail(
            sink,
            f"rank {env.rank} raised {failure.get('ename', 'an error')}: "
            f"{failure.get('evalue', sink.status)}",
        )
    return 0


def _fail(sink: TaggedReporter, message: str) -> int:
    """Leave SageMaker's FailureReason (``/opt/ml/output/failure``) and exit non-zero."""
    path = _dir("SM_OUTPUT_DIR", "/opt/ml/output") / "failure"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(message[:1000] + "\n")
    except OSError:
        pass
    sink.fatal(message)
    return 1
