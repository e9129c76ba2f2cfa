"""The kernel's CPU per message a training loop's ranks send: verified, decoded, recorded.

Runs the kernel's inbound path (:class:`~jupyter_distributed.cluster.router.Router`'s batch:
verify, order, decode, one store transaction, the hand-over) on this thread, without sockets,
on the messages ``bench_train.py``'s ranks send while a cell runs: a line (``Output``), a
batch of ``report()`` samples (``Metrics``, 13 samples of 2 values), a heartbeat. Each batch
holds one message (as the kernel mostly reads them; ``--per-batch`` more), recorded into a
real store (a temporary file; WAL, ``synchronous=NORMAL``), so the figure is the kernel's
per-message cost in ``bench_train.py`` on an idle core; ``--no-store`` leaves the store out
(the part that is this path's own). Prints µs of CPU per message (``time.process_time``,
median of ``--repeat`` rounds), and the same for the tick the I/O thread runs ~20 times a
second while a cell runs.

    PYTHONPATH=python python benchmarks/bench_intake.py [--messages 2000] [--repeat 5]
        [--per-batch 1] [--no-store]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import use_checkout  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--per-batch", type=int, default=1)
    parser.add_argument("--no-store", action="store_true")
    args = parser.parse_args()
    use_checkout()
    from jupyter_distributed.cluster.router import Router
    from jupyter_distributed.cluster.transport import Transport
    from jupyter_distributed.events import RunState
    from jupyter_distributed.history.records import RunRecord
    from jupyter_distributed.history.store import Store
    from jupyter_distributed.interface import RankInfo
    from jupyter_distributed.layout import Layout
    from jupyter_distributed.protocol.metrics import pack_samples
    from jupyter_distributed.protocol.reports import Heartbeat, Metrics, Output
    from jupyter_distributed.protocol.signing import Signer

    key = secrets.token_bytes(32)
    with tempfile.TemporaryDirectory(prefix="jd-intake-") as tmp:
        store = Store(Path(tmp) / "history.sqlite3")
        if args.no_store:
            store.append = lambda events, run=None: 0  # type: ignore[method-assign]
        layout = Layout(procs_per_node=2)
        info = {r: RankInfo(r, "here", 100 + r, "running", layout.coords(r)) for r in range(2)}
        router = Router("jd-c-bench", store, info, key, lambda: None, lambda why: None,
                        Transport.ipc())  # fmt: skip
        run_id = "run-bench"
        store.create_run(RunRecord(run_id, "local", 2, [0, 1], RunState.RUNNING, started=1.0))
        router.ranks.begin(run_id)
        router.cell.sent_to({0, 1})  # a cell runs: its ranks are awaited
        signers = [Signer(key, f"r{r}") for r in range(2)]
        now = time.time()
        samples = [(now + i * 0.007, {"loss": 2.3 - i * 1e-3, "step": float(i)}) for i in range(13)]
        packed = pack_samples(samples)

        def message(kind: str, i: int) -> list[bytes]:
            signer = signers[i % 2]
            if kind == "line":
                out = Output(run_id, "stdout", [(time.time(), f"step {i} loss 2.2931")])
                return [bytes(f) for f in signer.pack(out.to_header())]
            if kind == "samples":
                header = Metrics(run_id, len(samples)).to_header()
                return [bytes(f) for f in signer.pack(header, [packed])]
            beat = Heartbeat(run_id, time.time(), 99.5, 512.0, None, None, 24_000.0, "/", 0, 0)
            return [bytes(f) for f in signer.pack(beat.to_header())]

        def drain() -> None:
            while not router.inbox.empty():
                router.inbox.get_nowait()

        print(
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.messages} messages "
            f"a round, {args.per_batch} a batch, {'no store' if args.no_store else 'a store'}"
        )
        print("| message | µs of CPU per message (median) | rounds |\n|---|---|---|")
        for kind in ("line", "samples", "heartbeat"):
            rounds = []
            for _ in range(args.repeat):
                frames = [message(kind, i) for i in range(args.messages)]
                peer = b"\0peer"
                cpu = time.process_time()
                for first in range(0, len(frames), args.per_batch):
                    chunk = frames[first : first + args.per_batch]
                    router._take_batch([(peer, [memoryview(f) for f in m]) for m in chunk])
                    if router.cell.held[0] or router.cell.held[1]:
                        router.record([], [])  # (what the hold's tick does)
                    drain()
                rounds.append(1e6 * (time.process_time() - cpu) / args.messages)
            print(f"| {kind} | {statistics.median(rounds):.1f} | "
                  f"{' '.join(f'{x:.1f}' for x in rounds)} |")  # fmt: skip
        rounds = []
        for _ in range(args.repeat):
            cpu = time.process_time()
            for _ in range(args.messages):
                router._on_tick()
            rounds.append(1e6 * (time.process_time() - cpu) / args.messages)
        print(f"| (a tick) | {statistics.median(rounds):.1f} | "
              f"{' '.join(f'{x:.1f}' for x in rounds)} |")  # fmt: skip
        router.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
