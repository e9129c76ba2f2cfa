"""Where a 2-stage pipeline step's time goes, inside a real ``%%distributed`` cluster of 2 ranks
(as ``advise --verify`` runs it), beside what the advisor predicts for each part.

Run: ``python benchmarks/bench_pipeline_parts.py MODEL GLOBAL_BATCH M [M ...] [--repeats R]``
(MODEL: a model of ``bench_advise.py``, or ``tiny``: two ``Linear(4, 4)``, a stage of no
compute). Per microbatch count M: a ``--quick`` probe of the 2 ranks; on the ranks, the median
of 21 pipeline steps (``--pipeline simple``; the slower rank's), each rank's stage run as a
one-stage schedule of the same M microbatches in the same process (no messages), and a message
there and back through ``batch_isend_irecv`` (the pipelining library's path). So the messages
of one slot are two-stage ÷ (M + 1) − one-stage ÷ M. Beside them the advisor's prediction: the
schedule's own work per microbatch (``advise/framework.py``, in this process) and one message
(``advise/comm.py``, from the probe). The load average with every row (the machine is shared).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_advise import MODELS, SEQ
from common import bench_shell, use_checkout

TINY = "\ndef tiny():  # a stage of no compute: the schedule and its messages alone\n" \
    "    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))\n"  # fmt: skip

CELL = r"""
import statistics as _st, time as _t, torch, torch.distributed as dist
from torch.distributed import pipelining as _pl
from jupyter_distributed.modelshapes import loss_of as _loss, sample_input as _sample
from jupyter_distributed.worker.pipeline import split_sequential as _split
def _med(run, n=21):
    run(); run(); s = []
    for _ in range(n):
        dist.barrier(); t0 = _t.perf_counter(); run(); s.append(_t.perf_counter() - t0)
    return _st.median(s)
_r = dist.get_rank(); _o = {{}}
_model = {model}(); _batch = _sample(_model, {batch}, {seq!r})
_run = pipeline({model}(), lambda o, _y: _loss(o))
_o["two"] = _med(lambda: _run.step(_batch if _run.is_first else None,
                                   torch.zeros({batch}) if _run.is_last else None))
_g1 = dist.new_group([_r], use_local_synchronization=True)
_stage = _split({model}(), 2)[_r]
with torch.no_grad():
    _x = _split(_model, 2)[0](_batch) if _r == 1 else _batch
_one = _pl.ScheduleGPipe(_pl.PipelineStage(_stage, 0, 1, torch.device("cpu"), group=_g1), {m},
                         loss_fn=lambda o, _y: _loss(o))
_o["one"] = _med(lambda: _one.step(_x, target=_x, losses=[]))
_buf = torch.zeros_like(_split(_model, 2)[0](_batch[:1]).detach())
def _there_and_back():
    for first in (True, False):
        send = (_r == 0) == first
        op = dist.P2POp(dist.isend if send else dist.irecv, _buf, 1 - _r)
        for w in dist.batch_isend_irecv([op]):
            w.wait()
_o["round_trip"] = _med(_there_and_back, 41)
_jd_parts = _o
"""


def measure(
    ip: Any, model: str, batch: int, m: int, schedule: str = "simple"
) -> dict[str, Any] | None:
    from jupyter_distributed.advise.comm import fit_links
    from jupyter_distributed.advise.framework import pipeline_seconds
    from jupyter_distributed.advise.store import newest_probe

    session = ip.user_ns["_jd_bench_session"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        ip.run_line_magic("distributed", "probe --quick -n 2")
    links = fit_links(newest_probe(session.store, 2, None) or {})
    line = (f"%%distributed -n 2 --strategy model-parallel --partitions 2 --microbatches {m} "
            f"--pipeline {schedule} --push {model} --pull _jd_parts --quiet")  # fmt: skip
    code = CELL.format(model=model, batch=batch, seq=SEQ.get(model), m=m)
    ip.run_cell(f"{line}\n{code}")
    got = ip.user_ns.pop("_jd_parts", None)
    if not got:
        return None
    two, one = max(g["two"] for g in got), max(g["one"] for g in got)
    return {
        "two": two,
        "one": one,
        "messages_per_slot": two / (m + 1) - one / m,  # a slot less one microbatch's
        "round_trip": max(g["round_trip"] for g in got),
        "predicted_message": links.p2p(0, spans_nodes=False),
        "pair_latency": links.latency["intra"],
        "predicted_schedule": pipeline_seconds(ip.user_ns[model], SEQ.get(model), 1, 2),
    }


def _row(ip: Any, model: str, batch: int, m: int, schedule: str) -> None:
    load = os.getloadavg()[0]
    got = measure(ip, model, batch, m, schedule)
    if got is None:
        print(f"{m:4d}  {schedule:<11}  {load:4.1f}  FAILED")
        return
    sched = got["predicted_schedule"]
    said = "—" if sched is None else f"{1e3 * sched:.3f}"
    print(f"{m:4d}  {schedule:<11}  {load:4.1f}  {1e3 * got['two']:7.2f}  "
          f"{1e3 * got['one']:7.2f}  {1e3 * got['messages_per_slot']:9.3f}  "
          f"{1e3 * got['round_trip']:10.3f}  {2e3 * got['predicted_message']:11.3f}  "
          f"{1e6 * got['pair_latency']:11.0f}  {said:>16}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=[*SEQ, "tiny"])
    parser.add_argument("batch", type=int)
    parser.add_argument("m", type=int, nargs="+")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--schedule", nargs="+", default=["simple"],
                        choices=["simple", "interleaved"],
                        help="the pipeline's schedules to time (simple = GPipe, interleaved = "
                        "1F1B), alternated per M")  # fmt: skip
    args = parser.parse_args()
    if any(args.batch % m for m in args.m):
        parser.error(f"each M must divide the global batch {args.batch}")
    use_checkout(always=True)
    ip, _tmp = bench_shell("bench-pipeline-parts-")
    from jupyter_distributed.magics import DistributedMagics

    magics = next(m for m in ip.magics_manager.registry.values()
                  if isinstance(m, DistributedMagics))  # fmt: skip
    ip.user_ns["_jd_bench_session"] = magics.session
    ip.run_cell(MODELS + TINY)
    SEQ.setdefault("tiny", None)
    print(f"{args.model} × 2 ranks, global batch {args.batch} (ms; predicted: the advisor's)")
    print(
        "   M  sched        load  2-stage  1-stage  msgs/slot  there+back  pred 2 msgs  "
        "pair lat µs  pred schedule/µb"
    )
    try:
        for m in args.m:
            for _ in range(args.repeats):
                for schedule in args.schedule:
                    _row(ip, args.model, args.batch, m, schedule)
    finally:
        magics.session.shutdown()


if __name__ == "__main__":
    main()
