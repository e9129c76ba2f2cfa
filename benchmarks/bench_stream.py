"""Event-to-client latency and sustained lines/s of the server extension's live stream.

Starts a real Jupyter server (loopback, token auth) on a fresh store, a writer process that
plays a synthetic 256-rank run into the store as a kernel would (one transaction per batch),
and a WebSocket client on ``stream``. Prints a table.

    python benchmarks/bench_stream.py [--ranks 256] [--seconds 5] [--lines 200000]

Latency is the time from the writer stamping a line (just before its transaction) to the client
parsing the message that holds it: store commit + server poll (every 100 ms) + read + send.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

TOKEN = "bench-token"  # noqa: S105 - a throwaway token for a loopback-only server

WRITER = textwrap.dedent("""
    import sys, time
    from jupyter_distributed.events import OutputEvent, RunEvent, RunState, Stream
    from jupyter_distributed.history.store import RunRecord, Store
    path, run_id, ranks, mode, amount = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], \
        float(sys.argv[5])
    store = Store(path)
    store.create_run(RunRecord(id=run_id, backend="local", world_size=ranks,
                               ranks=list(range(ranks)), started=time.time()))
    if mode == "paced":  # every rank prints one line every 100 ms for `amount` seconds
        end = time.time() + amount
        n = 0
        while time.time() < end:
            t = time.time()
            store.append(OutputEvent(run_id, r, t, Stream.STDOUT, f"step {n} loss 0.{r:04d}")
                         for r in range(ranks))
            n += 1
            time.sleep(max(0.0, t + 0.1 - time.time()))
    else:  # `amount` lines as fast as the store takes them, one rank-round per transaction
        left = int(amount)
        while left > 0:
            t = time.time()
            k = min(left, ranks)
            store.append(OutputEvent(run_id, r, t, Stream.STDOUT, f"line {left - r}")
                         for r in range(k))
            left -= k
    store.append([RunEvent(run_id, time.time(), RunState.COMPLETED)])
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(tmp: Path, port: int) -> subprocess.Popen[bytes]:
    config = tmp / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}}})
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DISTRIBUTED_STORE": str(tmp / "history.sqlite3"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
    }
    return subprocess.Popen(  # noqa: S603 - our own interpreter, fixed arguments
        [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={tmp}",
            "--allow-root",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_ready(base: str) -> None:
    client = AsyncHTTPClient()
    for _ in range(300):
        try:
            await client.fetch(
                f"{base}/jupyter-distributed/api/version",
                headers={"Authorization": f"token {TOKEN}"},
            )
            return
        except (OSError, HTTPClientError):  # not listening yet, or not serving the API yet
            await asyncio.sleep(0.1)
    raise SystemExit("the server did not start")


async def follow(
    port: int, store: Path, run_id: str, ranks: int, mode: str, amount: float
) -> tuple[list[float], int, float]:
    """Stream one run while a writer plays it (``mode`` paced or flood), or replay it from the
    start (``mode`` replay): latencies (s), lines, seconds first→last."""
    query = f"run={run_id}" + ("&after=0" if mode == "replay" else "")
    request = HTTPRequest(
        f"ws://127.0.0.1:{port}/jupyter-distributed/api/stream?{query}",
        headers={"Authorization": f"token {TOKEN}"},
    )
    ws = await websocket_connect(request, max_message_size=512 * 1024 * 1024)
    start = time.time()
    writer = (
        None
        if mode == "replay"
        else subprocess.Popen(  # noqa: S603 - fixed arguments
            [sys.executable, "-c", WRITER, str(store), run_id, str(ranks), mode, str(amount)]
        )
    )
    latencies: list[float] = []
    lines = 0
    first = last = 0.0
    done = False
    while not done:
        message = await ws.read_message()
        now = time.time()
        if message is None:
            raise SystemExit("the server closed the stream")
        for item in json.loads(message)["events"]:
            event = item["event"]
            if event["kind"] == "output":
                latencies.append(now - event["t"])
                lines += 1
                first = first or (start if writer is None else now)
                last = now
            elif event["kind"] == "run" and event["state"] == "completed":
                done = True
    ws.close()
    if writer is not None:
        writer.wait()
    return latencies, lines, last - first


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        port = free_port()
        server = start_server(tmp, port)
        try:
            await wait_ready(f"http://127.0.0.1:{port}")
            store = tmp / "history.sqlite3"
            paced, n1, _ = await follow(port, store, "paced", args.ranks, "paced", args.seconds)
            flood, n2, span = await follow(port, store, "flood", args.ranks, "flood", args.lines)
            _, n3, span3 = await follow(port, store, "flood", args.ranks, "replay", 0)
        finally:
            server.terminate()
            server.wait()
    rows = [
        ("paced: ranks x 10 lines/s", f"{n1} lines", f"{args.ranks * 10} lines/s offered"),
        ("  latency p50", f"{pct(paced, 50) * 1000:.0f} ms", "write -> client"),
        ("  latency p99", f"{pct(paced, 99) * 1000:.0f} ms", ""),
        ("  latency max", f"{max(paced) * 1000:.0f} ms", ""),
        ("flood: as fast as written", f"{n2} lines", f"{args.ranks} lines per transaction"),
        ("  sustained", f"{n2 / span:,.0f} lines/s" if span else "-", "first -> last line"),
        ("  latency p50", f"{pct(flood, 50) * 1000:.0f} ms", "(includes backlog)"),
        ("  latency p99", f"{pct(flood, 99) * 1000:.0f} ms", ""),
        ("replay: the flood run again", f"{n3} lines", "after=0: catching up"),
        ("  stream capacity", f"{n3 / span3:,.0f} lines/s", "connect -> last line"),
    ]
    print(f"stream benchmark: {args.ranks} ranks, one Jupyter server, one WebSocket client")
    for name, value, note in rows:
        print(f"{name:<28}{value:>18}  {note}")


if __name__ == "__main__":
    asyncio.run(main())
