"""The kernel's share of a hang diagnosis at 1,000 ranks behind relays: every rank's stacks one
message each (as relays forwarded them before), against stacks grouped by signature at the
relays (issue 26).

    python benchmarks/bench_hang_groups.py [--ranks 1000] [--nodes 8] [--repeats 5]

Fake ranks: rank 0 finished the cell, the others wait in ``dist.barrier()`` at the same cell
line (a main thread of 14 frames, 3 other threads, as a torch rank's answer looks). Per
repeat, the answers to one stack request reach a real router (driven on this thread, as the
tests drive it): ``each``, one signed message per rank; ``grouped``, each node's answers put
through the relay's own batching (its ``Batcher``, in this process) and signed by the relay.
Then the stack board is read and the diagnosis made (:func:`~.cluster.hang.diagnose`). Prints
the kernel's CPU (``time.thread_time``: taking the answers, then the diagnosis) and the bytes
that reach the kernel, and checks that both give the same diagnosis. The relays' own work and
the ranks' are not counted (they run elsewhere); wall times on this shared machine are not a
claim.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import kernel_router, use_checkout  # noqa: E402

BARRIER = [
    ["/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py", 83, "wrapper",
     "torch.distributed.c10d_logger", "return func(*args, **kwargs)"],
    ["/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", 4166, "barrier",
     "torch.distributed.distributed_c10d", "work.wait()"],
]  # fmt: skip


def threads(rank: int) -> list[dict[str, Any]]:
    """A rank's answer: where rank 0 idles, or where the others wait in the barrier."""
    runtime = [
        [f"/site-packages/jupyter_distributed/worker/{m}.py", 40 + i, f"f{i}", f"jd.{m}", "x()"]
        for i, m in enumerate(["__main__", "runtime", "runtime", "pipeline", "strategies"] * 2)
    ]
    main = [*runtime, ["<cell 1>", 3, "<module>", "", "dist.barrier()"], *BARRIER]
    if rank == 0:
        main = runtime
    others = [
        {"name": name, "main": False, "frames": [["/lib/threading.py", 320, "wait", "", ""]]}
        for name in ("jd-capture-stdout", "jd-capture-stderr", "jd-io")
    ]
    return [{"name": "MainThread", "main": True, "frames": main}, *others]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    use_checkout(always=True)
    import zmq

    from jupyter_distributed.cluster.hang import diagnose
    from jupyter_distributed.cluster.relaybatch import Batcher
    from jupyter_distributed.protocol.signing import Signer

    nodes = args.nodes
    n = args.ranks // nodes * nodes
    per = n // nodes
    answers = {r: threads(r) for r in range(n)}
    results: dict[str, list[tuple[float, float, int]]] = {"each": [], "grouped": []}
    texts: dict[str, str] = {}

    def frames_of(peer: str, signed: list[Any]) -> list[Any]:
        return [zmq.Frame(peer.encode()), *(zmq.Frame(bytes(f)) for f in signed)]

    def node(i: int, mode: str, request: str, key: bytes) -> list[list[Any]]:
        """Node ``i``'s answers as they reach the kernel: one message per rank (``each``), or
        the relay's batch, its ranks' answers put through its batching (``grouped``)."""
        mine = range(i * per, (i + 1) * per)
        fields = {r: {"type": "stacks", "request_id": request, "threads": answers[r]} for r in mine}
        signed = {r: Signer(key, f"r{r}").pack(f) for r, f in fields.items()}
        if mode == "each":
            return [frames_of(f"n{i}", signed[r]) for r in mine]
        batcher = Batcher(mine)
        batcher.alike.sent(
            {"type": "stack_request", "request_id": request, "dst": [f"r{r}" for r in mine]}
        )
        for r in mine:
            if not batcher.keep(Signer(key, "relay").check(signed[r]), 0, 2000):  # (as it reads)
                raise SystemExit("a rank's stacks did not fit the batch")
        return [frames_of(f"n{i}", Signer(key, f"n{i}").pack(batcher.take() or {}))]

    with kernel_router(n, nodes, "running") as (router, _store, key):
        for repeat in range(args.repeats):
            for mode in ("each", "grouped"):
                request = f"q{repeat}{mode}"
                messages = [m for i in range(nodes) for m in node(i, mode, request, key)]
                size = sum(len(f.bytes) for m in messages for f in m[1:])
                router.board.open(request)
                t0 = time.thread_time()
                for m in messages:
                    router._on_batch([m])
                stacks = router.board.wait(request, range(n), 0)
                t1 = time.thread_time()
                busy = {r: s for r, s in stacks.items() if r != 0}
                text = diagnose(busy, list(range(n)), finished=[0]).text
                t2 = time.thread_time()
                if len(stacks) != n:
                    raise SystemExit(f"{mode}: {len(stacks)} of {n} ranks' stacks taken")
                texts.setdefault(mode, text)
                results[mode].append((t1 - t0, t2 - t1, size))
    same = "same" if texts["each"] == texts["grouped"] else "DIFFERENT"
    print(f"{n:,} ranks behind {nodes} relays, {args.repeats} repeats (medians); diagnoses: {same}")
    print("| stacks | kernel CPU: taking the answers | the diagnosis | bytes to the kernel |")
    print("|---|---|---|---|")
    for mode, rows in results.items():
        take = statistics.median(r[0] for r in rows) * 1e3
        diag = statistics.median(r[1] for r in rows) * 1e3
        print(f"| {mode} | {take:.1f} ms | {diag:.1f} ms | {rows[0][2]:,} |")
    print("\n" + texts["grouped"].splitlines()[0][:300])


if __name__ == "__main__":
    main()
