"""Where a DDP step's time goes, inside a real ``%%distributed --strategy ddp`` cluster of 2
ranks (as ``advise --verify`` runs it), beside what the advisor predicts for its all-reduce.

Run: ``python benchmarks/bench_ddp_parts.py MODEL GLOBAL_BATCH [--repeats R]`` (MODEL: a model
of ``bench_advise.py``). Per repeat: a ``--quick`` probe of the 2 ranks; on the ranks (the
slower rank's median of 21 runs, a barrier before each): the plain forward+backward, the same
under DDP with ``no_sync`` (the reducer's hooks, no collective), under DDP (the step's), one
``all_reduce`` of the model's gradient bytes (DDP's one bucket at these sizes), the best, 10th
percentile and median of 41 all-reduces of 1 KiB back to back, and of 21 of 1 KiB and of the
bucket's bytes each right after the rank's forward+backward (as DDP's call is). Beside them the
advisor's all-reduce of those bytes: from the probe's curve (``curve``: its fitted per-call
overhead plus bytes at its rate, the rule before) and the rule now (:meth:`.comm.Links.allreduce`:
the probe's ``allreduce_call_s`` plus the bytes at the curve's rate).
The load average with every row (the machine is shared).
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
from bench_advise import SEQ, suite_shell

CELL = r"""
import statistics as _st, time as _t, torch, torch.distributed as dist
from jupyter_distributed.modelshapes import loss_of as _loss, sample_input as _sample
def _runs(run, n=21):
    run(); run(); s = []
    for _ in range(n):
        dist.barrier(); t0 = _t.perf_counter(); run(); s.append(_t.perf_counter() - t0)
    return sorted(s)
def _fb(m, x):
    m.zero_grad(set_to_none=True); _loss(m(x)).backward()
_m = {model}(); _x = _sample(_m, {micro}, {seq!r}); _o = {{}}
_o["plain"] = _st.median(_runs(lambda: _fb(_m, _x)))
_d = wrap_ddp({model}())
def _nosync():
    with _d.no_sync():
        _fb(_d, _x)
_o["no_sync"] = _st.median(_runs(_nosync))
_o["ddp"] = _st.median(_runs(lambda: _fb(_d, _x)))
_o["bytes"] = 4 * sum(p.numel() for p in _m.parameters())
_g = torch.zeros(_o["bytes"] // 4)
_o["bucket"] = _st.median(_runs(lambda: dist.all_reduce(_g)))
_s = torch.zeros(256)
_k = _runs(lambda: dist.all_reduce(_s), 41)
_o["small"] = (_k[0], _k[len(_k) // 10], _st.median(_k))
def _after(t, n=21):  # an all_reduce right after this rank's forward+backward, as in a step
    s = []
    for _ in range(n):
        dist.barrier(); _fb(_m, _x); t0 = _t.perf_counter(); dist.all_reduce(t)
        s.append(_t.perf_counter() - t0)
    return sorted(s)
_k = _after(_s)
_o["small_after"] = (_k[0], _k[len(_k) // 10], _st.median(_k))
_k = _after(_g)
_o["bucket_after"] = (_k[0], _k[len(_k) // 10], _st.median(_k))
_jd_parts = _o
"""


def measure(ip: Any, model: str, batch: int) -> dict[str, Any] | None:
    from jupyter_distributed.advise.comm import fit_links
    from jupyter_distributed.advise.store import newest_probe

    session = ip.user_ns["_jd_bench_session"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        ip.run_line_magic("distributed", "probe --quick -n 2")
    links = fit_links(newest_probe(session.store, 2, None) or {})
    line = f"%%distributed -n 2 --strategy ddp --push {model} --pull _jd_parts --quiet"
    code = CELL.format(model=model, micro=batch // 2, seq=SEQ.get(model))
    ip.run_cell(f"{line}\n{code}")
    got = ip.user_ns.pop("_jd_parts", None)
    if not got:
        return None
    out = {k: max(g[k] for g in got) for k in ("plain", "no_sync", "ddp", "bucket")}
    for k in ("small", "small_after", "bucket_after"):
        out[k] = tuple(max(g[k][i] for g in got) for i in range(3))
    nbytes = got[0]["bytes"]
    out["bytes"] = nbytes
    alpha, beta = links.curve or (0.0, 1.0)
    out["curve"] = alpha + nbytes / beta
    out["alpha"] = alpha
    out["now"] = links.allreduce(nbytes, 2, spans_nodes=False)
    out["pair_latency"] = links.latency["intra"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=list(SEQ))
    parser.add_argument("batch", type=int)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if args.batch % 2:
        parser.error("the global batch must be even (2 ranks)")
    ip, magics, _tmp = suite_shell("bench-ddp-parts-")
    print(f"{args.model} × 2 ranks (DDP), global batch {args.batch} (ms; the slower rank's)")
    print(" load  plain  no_sync    ddp  ddp-no_sync  all_reduce KB  ms   1 KiB best/p10/med"
          "   predicted: curve (α)  now   pair lat µs  after f+b: 1 KiB"
          "  bucket (best/p10/med)")  # fmt: skip
    try:
        for _ in range(args.repeats):
            load = os.getloadavg()[0]
            g = measure(ip, args.model, args.batch)
            if g is None:
                print(f"{load:5.1f}  FAILED")
                continue
            best, p10, med = (1e3 * s for s in g["small"])
            after = "/".join(f"{1e3 * s:.2f}" for s in g["small_after"])
            bucket = "/".join(f"{1e3 * s:.2f}" for s in g["bucket_after"])
            print(f"{load:5.1f}  {1e3 * g['plain']:5.2f}  {1e3 * g['no_sync']:7.2f}  "
                  f"{1e3 * g['ddp']:5.2f}  {1e3 * (g['ddp'] - g['no_sync']):11.2f}  "
                  f"{g['bytes'] / 1e3:13.0f}  {1e3 * g['bucket']:5.2f}   "
                  f"{best:.3f}/{p10:.3f}/{med:.3f}   "
                  f"{1e3 * g['curve']:15.2f} ({1e3 * g['alpha']:.2f})  {1e3 * g['now']:4.2f}"
                  f"  {1e6 * g['pair_latency']:11.0f}   {after:>16}  {bucket:>16}",
                  flush=True)  # fmt: skip
    finally:
        magics.session.shutdown()


if __name__ == "__main__":
    main()
