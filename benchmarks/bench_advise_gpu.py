"""The advisor on one device (issue 25's GPU suite): its predictions against a real training step.

Part A, single-device memory and compute: for each point (GPT-like transformers of 2-3 sizes,
fp32 and bf16, 2 sequence lengths and microbatches, and a model with a block whose outer
product is a large temporary that formulas miss; ``gpu_suite.py``), the advisor's own functions
predict the peak memory of a training step (``advise.memory.trace``: MemTracker on fake
tensors, then ``layout_memory`` for one rank, with the GPU's cuBLAS workspace the advisor
measures) and its compute (``advise.timing.stage_compute``: forward and backward, and the AdamW
step, timed on this device at the real shape; and the analytic fallback's 6 × parameters ×
tokens at ``gemm_flops``). Against: the same model trained for real on the device (AdamW as the
launch line builds it), peak ``torch.cuda.max_memory_allocated`` (on CPU: the peak of live
tensor bytes by torch's profiler) and the median step after 3 warm-up steps (CUDA events; on CPU
wall seconds).

Part B, one rank of an N-way layout: FSDP2 (``fully_shard`` per child with parameters, then the
root, as ``shard_model``) and DDP (its buckets; collectives a no-op hook) on torch's fake process
group of world size N with real tensors on the device, so the rank's shard, gathered units and
buffers are really allocated; against the advisor's per-rank prediction for that layout (the
rule for the collectives it picks on this device, ``"nccl"`` on a GPU, ``"gloo"`` on CPU; and
the ``"nccl"`` rule, no collective buffers, which is what the fake group allocates) and, for
time, ``advise.framework``'s timing of the wrapped model.

Run (from the repository root): ``PYTHONPATH=python python benchmarks/bench_advise_gpu.py
[--device cpu|cuda] [--quick] [--repeats 10] [--budget-s 170] [--json out.json]``. Prints
tables; errors are predicted ÷ measured − 1 (+: over-predicted). Every part and point is
guarded: a failure prints one line and the run goes on. Points are skipped (and say so) past
55 % of ``--budget-s`` in part A and past all of it in part B.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout
from gpu_suite import LAYOUTS, POINTS, Point, factory_of, shard, train, with_ddp

GIB, MIB = 2**30, 2**20


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def pct(x: float | None) -> str:
    return "    -" if x is None else f"{100 * x:+6.1f}%"


def err(predicted: float | None, measured: float | None) -> float | None:
    return None if not predicted or not measured else predicted / measured - 1


def summary(label: str, errors: list[float | None]) -> str:
    got = [abs(e) for e in errors if e is not None]
    if not got:
        return f"{label}: no points"
    signed = [e for e in errors if e is not None]
    return (
        f"{label}: median |error| {100 * statistics.median(got):.1f} %, worst "
        f"{100 * max(got):.1f} %, signed {100 * min(signed):+.1f} … {100 * max(signed):+.1f} % "
        f"({len(got)} points)"
    )


def device_facts(device: str) -> dict[str, Any]:
    """What the advisor reads of this device: its memory (``local_cluster``) and GEMM rate."""
    import torch

    from jupyter_distributed.advise.plan import local_cluster
    from jupyter_distributed.advise.timing import (
        compute_device,
        device_workspace_bytes,
        gemm_flops,
        rank_threads,
    )

    threads = rank_threads(1)[0]
    out: dict[str, Any] = {"torch": torch.__version__, "advisor_device": compute_device()}
    out.update(threads=threads, workspace_bytes=device_workspace_bytes())
    if device == "cuda":
        free, total = torch.cuda.mem_get_info()
        out.update(name=torch.cuda.get_device_name(), mem_free=free, mem_total=total)
    cluster = local_cluster(1, 1, None)
    out.update(budget_bytes=cluster.memory_bytes, budget_source=cluster.memory_source)
    for dtype in ("fp32", "bf16"):
        began = time.perf_counter()
        out[f"gemm_{dtype}_flops"] = gemm_flops(threads, dtype)
        out[f"gemm_{dtype}_s"] = time.perf_counter() - began
    return out


def point_a(p: Point, device: str, repeats: int) -> dict[str, Any]:
    """One point of part A: the advisor's predictions, then the real steps."""
    from jupyter_distributed.advise.intake import from_factory
    from jupyter_distributed.advise.memory import layout_memory, on_device, trace
    from jupyter_distributed.advise.timing import (
        device_workspace_bytes,
        gemm_flops,
        rank_threads,
        stage_compute,
    )

    f, threads, fixed = factory_of(p), rank_threads(1)[0], device_workspace_bytes()
    began = time.perf_counter()
    info = from_factory(f, p.seq)
    stages = trace(f, p.micro, p.seq, "adamw")
    memory = on_device(
        layout_memory(stages, info.layer_params, info.parameters, "ddp", 1, 1, False, 0.0), fixed
    )
    traced = time.perf_counter()
    (compute,) = stage_compute(f, 1, p.seq, threads, p.micro)
    timed = time.perf_counter()
    analytic = 6 * info.parameters * p.micro * p.seq / gemm_flops(threads, p.dtype)
    got = train(f, p, device, repeats)
    peak, ws = got["peak_bytes"], got["workspace_bytes"]
    step = got["fwd_bwd_s"] + got["optimizer_s"]
    return {
        "point": p.name, **asdict(p), "parameters": info.parameters,
        "predicted_bytes": memory.total, "breakdown": memory.breakdown(), **got,
        "predicted_workspace_bytes": fixed, "memory_error": err(memory.total, peak),
        "memory_error_less_workspace": err(memory.total - fixed, peak - ws),
        "predicted_fwd_bwd_s": compute.fwd_bwd, "predicted_optimizer_s": compute.optimizer,
        "fwd_bwd_error": err(compute.fwd_bwd, got["fwd_bwd_s"]),
        "optimizer_error": err(compute.optimizer, got["optimizer_s"]),
        "step_error": err(compute.fwd_bwd + compute.optimizer, step),
        "analytic_s": analytic, "analytic_error": err(analytic, got["fwd_bwd_s"]),
        "trace_s": traced - began, "timing_s": timed - traced,
    }  # fmt: skip


HEAD_A = (
    f"{'point':<32} {'params':>7} {'pred GiB':>9} {'meas GiB':>9} {'err':>7} {'ws MiB':>6} "
    f"{'err-ws':>7} {'rsv GiB':>8} | {'fb pred':>8} {'fb meas':>8} {'err':>7} "
    f"{'opt pred':>8} {'opt meas':>8} {'err':>7} {'step err':>8} | {'6PT ms':>8} {'err':>7}"
)


def row_a(r: dict[str, Any]) -> str:
    ms = 1e3
    return (
        f"{r['point']:<32} {r['parameters'] / 1e6:>6.1f}M {r['predicted_bytes'] / GIB:>9.4f} "
        f"{r['peak_bytes'] / GIB:>9.4f} {pct(r['memory_error'])} "
        f"{r['workspace_bytes'] / MIB:>6.1f} "
        f"{pct(r['memory_error_less_workspace'])} {r['reserved_bytes'] / GIB:>8.3f} | "
        f"{ms * r['predicted_fwd_bwd_s']:>8.2f} {ms * r['fwd_bwd_s']:>8.2f} "
        f"{pct(r['fwd_bwd_error'])} "
        f"{ms * r['predicted_optimizer_s']:>8.2f} {ms * r['optimizer_s']:>8.2f} "
        f"{pct(r['optimizer_error'])} {pct(r['step_error']):>8} | {ms * r['analytic_s']:>8.2f} "
        f"{pct(r['analytic_error'])}"
    )


def layout_b(p: Point, world: int, strategy: str, device: str, repeats: int) -> dict[str, Any]:
    """One rank of ``strategy`` over ``world`` ranks on the fake process group."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from jupyter_distributed.advise.framework import ddp_seconds, fsdp_seconds
    from jupyter_distributed.advise.intake import from_factory
    from jupyter_distributed.advise.memory import layout_memory, on_device, trace
    from jupyter_distributed.advise.plan import _collectives
    from jupyter_distributed.advise.timing import (
        device_workspace_bytes,
        rank_threads,
        stage_compute,
    )

    f, threads, fixed = factory_of(p), rank_threads(1)[0], device_workspace_bytes()
    info = from_factory(f, p.seq)
    stages = trace(f, p.micro, p.seq, "adamw")
    collectives = _collectives()  # the advisor's pick for this device: "nccl" on a GPU

    def predicted(rule: str) -> int:
        got = layout_memory(stages, info.layer_params, info.parameters, strategy, world, 1,
                            False, 0.0, 2, rule)  # fmt: skip
        return on_device(got, fixed).total

    # the advisor's timing of the wrapped model makes (and destroys) its own process group
    (plain,) = stage_compute(f, 1, p.seq, threads, p.micro)
    if strategy == "fsdp":
        timed = fsdp_seconds(f, p.seq, threads, p.micro, world)
    else:
        ddp = ddp_seconds(f, p.seq, threads, p.micro)
        timed = (ddp, plain.optimizer) if ddp is not None else None
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        got = train(f, p, device, repeats, shard if strategy == "fsdp" else with_ddp)
    finally:
        dist.destroy_process_group()
    pred = predicted(collectives)
    nccl = predicted("nccl")  # no collective buffers: what the fake group allocates too
    step = got["fwd_bwd_s"] + got["optimizer_s"]
    return {
        "layout": f"{strategy} N={world}", "point": p.name, "world": world, "strategy": strategy,
        "collectives": collectives, "predicted_bytes": pred, "predicted_nccl_bytes": nccl,
        "predicted_workspace_bytes": fixed,
        **got, "memory_error": err(pred, got["peak_bytes"]),
        "memory_error_nccl": err(nccl, got["peak_bytes"]),
        "memory_error_nccl_less_workspace":
        err(nccl - fixed, got["peak_bytes"] - got["workspace_bytes"]),
        "predicted_step_s": sum(timed) if timed else None,
        "step_error": err(sum(timed), step) if timed else None,
    }  # fmt: skip


HEAD_B = (
    f"{'layout':<12} {'point':<32} {'pred GiB':>9} {'err':>7} {'nccl rule':>9} {'err':>7} "
    f"{'meas GiB':>9} {'ws MiB':>6} {'err-ws':>7} {'rsv GiB':>8} | {'step pred':>9} "
    f"{'meas ms':>8} {'err':>7}"
)


def row_b(r: dict[str, Any]) -> str:
    pred_step = r["predicted_step_s"]
    return (
        f"{r['layout']:<12} {r['point']:<32} {r['predicted_bytes'] / GIB:>9.4f} "
        f"{pct(r['memory_error'])} {r['predicted_nccl_bytes'] / GIB:>9.4f} "
        f"{pct(r['memory_error_nccl'])} {r['peak_bytes'] / GIB:>9.4f} "
        f"{r['workspace_bytes'] / MIB:>6.1f} {pct(r['memory_error_nccl_less_workspace'])} "
        f"{r['reserved_bytes'] / GIB:>8.3f} | "
        f"{'-' if pred_step is None else f'{1e3 * pred_step:.2f}':>9} "
        f"{1e3 * (r['fwd_bwd_s'] + r['optimizer_s']):>8.2f} {pct(r['step_error'])}"
    )


def _rate(flops: float) -> str:
    return f"{flops / 1e12:.1f} TFLOP/s" if flops >= 1e12 else f"{flops / 1e9:.1f} GFLOP/s"


def _guarded(label: str, run: Callable[[], dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    try:
        rows.append(run())
    except Exception as exc:  # noqa: BLE001 (one failure is printed; the rest still runs)
        print(f"  {label}: FAILED {_first_line(exc)}", flush=True)
        rows.append({"point": label, "error": _first_line(exc)})


def run(
    device: str, quick: bool, repeats: int, budget_s: float, out: Path | None
) -> dict[str, Any]:
    """Every part, each guarded; the results so far are written to ``out`` after each row."""
    began = time.perf_counter()
    kind = "quick" if quick else device
    done: dict[str, Any] = {"device": device, "quick": quick, "repeats": repeats}

    def write() -> None:
        if out is not None:
            out.write_text(json.dumps(done, indent=1, default=str))

    def save(part: str, part_began: float) -> None:
        done[f"{part}_s"] = time.perf_counter() - part_began
        print(f"[{part}: {done[f'{part}_s']:.1f} s; {time.perf_counter() - began:.1f} s in all]\n")
        write()

    def over(label: str, share: float = 1.0) -> bool:
        """Past ``share`` of the budget (part A stops at 55 %, leaving part B its time)."""
        if time.perf_counter() - began <= share * budget_s:
            return False
        print(f"  {label}: SKIPPED (past {share:.0%} of --budget-s {budget_s:.0f})", flush=True)
        return True

    t = time.perf_counter()
    print("== device facts the advisor uses ==", flush=True)
    try:
        facts = device_facts(device)
        done["facts"] = facts
        for k, v in facts.items():
            shown = f"{v / MIB:.1f} MiB" if k == "workspace_bytes" else (
                f"{v / GIB:.2f} GiB") if k.startswith(("mem_", "budget_b")) else (
                _rate(v) if k.endswith("_flops") else f"{v:.3f}" if isinstance(v, float) else v
            )  # fmt: skip
            print(f"  {k}: {shown}")
    except Exception as exc:  # noqa: BLE001
        print(f"  facts: FAILED {_first_line(exc)}")
    save("facts", t)

    t = time.perf_counter()
    print("== A: one device, a training step (AdamW): predicted against measured ==", flush=True)
    print(HEAD_A, flush=True)
    rows_a: list[dict[str, Any]] = []
    done["a"] = rows_a
    for p in POINTS[kind]:
        if not over(p.name, 0.55):
            _guarded(p.name, lambda p=p: point_a(p, device, repeats), rows_a)
            write()
            if "error" not in rows_a[-1]:
                print(row_a(rows_a[-1]), flush=True)
    ok = [r for r in rows_a if "error" not in r]
    for label, key in (("memory", "memory_error"), ("memory less cuBLAS workspace",
                       "memory_error_less_workspace"), ("forward+backward", "fwd_bwd_error"),
                       ("step (fwd+bwd+AdamW)", "step_error"), ("analytic 6PT vs fwd+bwd",
                       "analytic_error")):  # fmt: skip
        print("  " + summary(label, [r[key] for r in ok]))
    save("a", t)

    t = time.perf_counter()
    print("== B: one rank of N on the fake process group, real tensors ==", flush=True)
    print(HEAD_B, flush=True)
    rows_b: list[dict[str, Any]] = []
    done["b"] = rows_b
    for p, worlds in LAYOUTS[kind]:
        for world in worlds:
            for strategy in ("fsdp", "ddp"):
                label = f"{strategy} N={world} {p.name}"
                if not over(label):
                    _guarded(label, lambda p=p, w=world, s=strategy: layout_b(
                        p, w, s, device, repeats), rows_b)  # fmt: skip
                    write()
                    if "error" not in rows_b[-1]:
                        print(row_b(rows_b[-1]), flush=True)
    ok = [r for r in rows_b if "error" not in r]
    print("  " + summary("memory (advisor's rule)", [r["memory_error"] for r in ok]))
    print("  " + summary("memory (nccl rule)", [r["memory_error_nccl"] for r in ok]))
    print("  " + summary("step", [r["step_error"] for r in ok]))
    save("b", t)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="default: cuda where there is one")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="tiny models (a CPU smoke run)")
    parser.add_argument("--repeats", type=int, default=10, help="timed steps after 3 warm-up")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="skip points past it (default: 170 s on a GPU)")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    use_checkout()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU here; use --device cpu")
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be at least 1, got {args.repeats}")
    size = "quick" if args.quick else "full"
    print(f"bench_advise_gpu: device {device}, torch {torch.__version__}, "
          f"python {sys.version.split()[0]}, {size}", flush=True)  # fmt: skip
    budget = args.budget_s if args.budget_s is not None else (170.0 if device == "cuda" else 1e9)
    run(device, args.quick, args.repeats, budget, args.json)


if __name__ == "__main__":
    main()
