"""The live stream sends at most 5 deltas a second to a client that follows the tail, and every
event still arrives, in order (issue 26: the panel at 1,000 ranks gets more rows per delta, not
more deltas)."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_distributed.events import OutputEvent, RunState, Stream
from jupyter_distributed.history.records import RunRecord
from jupyter_distributed.history.store import Store
from jupyter_distributed.server.stream import DELTA_GAP, Tail, pump

LINES = 60


def test_a_following_stream_sends_at_most_five_deltas_a_second(tmp_path: Path) -> None:
    store = Store(tmp_path / "history.sqlite")
    run_id = "20261126-000000-deltas00"
    store.create_run(
        RunRecord(
            id=run_id, backend="local", world_size=1, ranks=[0], state=RunState.RUNNING,
            cluster_id="c", spec={}, source="print(1)",
            notebook="n.ipynb", cell_id="x", host="h", kernel_pid=1, started=time.time(),
        )
    )  # fmt: skip
    sends: list[tuple[float, list[Any]]] = []

    def lines() -> list[str]:
        return [i["event"]["text"] for _, items in sends for i in items if "text" in i["event"]]

    def write() -> None:  # a rank printing every 10 ms for about 0.6 s
        for i in range(LINES):
            store.append([OutputEvent(run_id, 0, time.time(), Stream.STDOUT, f"line {i}\n")])
            time.sleep(0.01)

    async def follow() -> None:
        loop = asyncio.get_running_loop()

        async def send(message: Any) -> None:
            sends.append((loop.time(), message["events"]))

        def closed() -> bool:
            return len(lines()) >= LINES

        writer = threading.Thread(target=write)
        writer.start()
        try:
            await asyncio.wait_for(pump(Tail(store), 0, run_id, send, closed), 30)
        finally:
            writer.join()

    try:
        asyncio.run(follow())
    finally:
        store.close()
    assert lines() == [f"line {i}\n" for i in range(LINES)]  # none lost, none repeated, in order
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(sends)]
    assert min(gaps) >= DELTA_GAP - 0.005, gaps
