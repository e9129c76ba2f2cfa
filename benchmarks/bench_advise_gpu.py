"""The advisor on one device (issue 25's GPU suite): its predictions against a real training step.

Part A, single-device memory and compute: for each point (GPT-like transformers of 2-3 sizes,
fp32 and bf16, 2 sequence lengths and microbatches, and a model with a block whose outer
product is a large temporary that formulas miss), the advisor's own functions predict the peak
memory of a training step (``advise.memory.trace``: MemTracker on fake tensors, then
``layout_memory`` for one rank) and its compute (``advise.timing.stage_compute``: forward and
backward, and the AdamW step, timed on this device at the real shape; and the analytic
fallback's 6 × parameters × tokens at ``gemm_flops``). Against: the same model trained for real
on the device (AdamW as the launch line builds it), peak ``torch.cuda.max_memory_allocated``
(on CPU: the peak of live tensor bytes by torch's profiler) and the median step after warm-up
(CUDA events; on CPU wall seconds).

Part B, one rank of an N-way layout: FSDP2 (``fully_shard`` per child with parameters, then the
root, as ``shard_model``) and DDP (its buckets; collectives a no-op hook) on torch's fake process
group of world size N with real tensors on the device, so the rank's shard, gathered units and
buffers are really allocated; against the advisor's per-rank prediction for that layout (FSDP:
the rule for the collectives the advisor picks on this device, ``"nccl"`` on a GPU, and the
rule without a copy in the reduce-scatter, which the fake group matches) and, for time,
``advise.framework``'s timing of the wrapped model.

Run (from the repository root): ``PYTHONPATH=python python benchmarks/bench_advise_gpu.py
[--device cpu|cuda] [--quick] [--repeats 10] [--json out.json]``. Prints tables; errors are
predicted ÷ measured − 1 (+: over-predicted). Every part and point is guarded: a failure prints
one line and the run goes on. ``--budget-s``: points after it are skipped (say so).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout

GIB, MIB = 2**30, 2**20
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


@dataclass(frozen=True)
class Point:
    model: str  # "gpt", or "temp": a gpt whose last block is an outer product (a big temporary)
    width: int
    layers: int
    heads: int
    vocab: int
    dtype: str
    micro: int
    seq: int

    @property
    def name(self) -> str:
        return f"{self.model} d{self.width} L{self.layers} {self.dtype} b{self.micro} s{self.seq}"


def _p(model: str, w: int, n: int, h: int, v: int, dtype: str, b: int, s: int) -> Point:
    return Point(model, w, n, h, v, dtype, b, s)


POINTS = {  # part A's points; part B's (point, world sizes)
    "cuda": [
        _p("gpt", 512, 4, 8, 8192, "fp32", 8, 512),
        _p("gpt", 512, 4, 8, 8192, "bf16", 8, 1024),
        _p("gpt", 1024, 8, 16, 32000, "bf16", 4, 1024),
        _p("gpt", 1024, 8, 16, 32000, "bf16", 8, 1024),
        _p("gpt", 1024, 8, 16, 32000, "fp32", 4, 1024),
        _p("gpt", 2048, 8, 16, 32000, "bf16", 4, 2048),
        _p("temp", 512, 2, 8, 8192, "fp32", 8, 1024),
        _p("temp", 512, 2, 8, 8192, "bf16", 8, 2048),
    ],
    "cpu": [
        _p("gpt", 128, 2, 4, 2000, "fp32", 4, 64),
        _p("gpt", 128, 2, 4, 2000, "fp32", 8, 128),
        _p("gpt", 256, 4, 8, 4000, "fp32", 4, 64),
        _p("gpt", 256, 4, 8, 4000, "bf16", 4, 64),
        _p("temp", 128, 1, 4, 2000, "fp32", 4, 64),
        _p("temp", 128, 1, 4, 2000, "fp32", 8, 128),
    ],
    "quick": [
        _p("gpt", 64, 2, 4, 512, "fp32", 4, 32),
        _p("gpt", 64, 2, 4, 512, "fp32", 8, 64),
        _p("gpt", 64, 2, 4, 512, "bf16", 4, 32),
        _p("gpt", 128, 2, 4, 1000, "fp32", 4, 32),
        _p("temp", 64, 1, 4, 512, "fp32", 4, 32),
        _p("temp", 64, 1, 4, 512, "fp32", 8, 32),
    ],
}
LAYOUTS = {
    "cuda": [(_p("gpt", 1024, 8, 16, 32000, "bf16", 4, 1024), (8, 64)),
             (_p("gpt", 1024, 8, 16, 32000, "fp32", 4, 1024), (8,))],
    "cpu": [(_p("gpt", 256, 4, 8, 4000, "fp32", 4, 64), (8, 64))],
    "quick": [(_p("gpt", 128, 2, 4, 1000, "fp32", 4, 32), (8, 64))],
}  # fmt: skip


def _outer(x: Any) -> Any:
    return (x.unsqueeze(-1) * x.unsqueeze(-2)).sum(-1)


_FACTORIES: dict[Point, Callable[[], Any]] = {}


def factory_of(p: Point) -> Callable[[], Any]:
    """One zero-argument factory per model (the advisor caches its traces and timings by it)."""
    key = Point(p.model, p.width, p.layers, p.heads, p.vocab, p.dtype, 0, 0)
    if key not in _FACTORIES:

        def build() -> Any:
            return _build(key)

        build.__name__ = build.__qualname__ = f"{p.model}_d{p.width}_L{p.layers}_{p.dtype}"
        _FACTORIES[key] = build
    return _FACTORIES[key]


def _outer_block(width: int, dtype: Any) -> Any:
    """Down to r = min(128, width / 2), the outer product of each token's r values with
    themselves summed over one side (a (b, s, r, r) temporary in forward and in backward), back
    up."""
    import torch

    rank = min(128, width // 2)

    class OuterProduct(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return _outer(x)

    return torch.nn.Sequential(
        torch.nn.Linear(width, rank, dtype=dtype), OuterProduct(),
        torch.nn.Linear(rank, width, dtype=dtype),
    )  # fmt: skip


def _build(p: Point) -> Any:
    """The model in its dtype as built (``dtype=``: a module built on the advisor's fake tensors
    cannot be converted with ``.to(dtype)`` in torch 2.13, whose ``_apply`` swaps fake tensors)."""
    import torch

    dtype = getattr(torch, DTYPES[p.dtype])
    blocks = [
        torch.nn.TransformerEncoderLayer(p.width, p.heads, 4 * p.width, dropout=0.0,
                                         activation="gelu", batch_first=True, norm_first=True,
                                         dtype=dtype)
        for _ in range(p.layers)
    ]  # fmt: skip
    if p.model == "temp":
        blocks.append(_outer_block(p.width, dtype))
    return torch.nn.Sequential(
        torch.nn.Embedding(p.vocab, p.width, dtype=dtype),
        *blocks,
        torch.nn.LayerNorm(p.width, dtype=dtype),
        torch.nn.Linear(p.width, p.vocab, bias=False, dtype=dtype),
    )


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
    under = min((e for e in errors if e is not None), default=0.0)
    return (
        f"{label}: median |error| {100 * statistics.median(got):.1f} %, worst "
        f"{100 * max(got):.1f} %, most under-predicted {100 * under:+.1f} % ({len(got)} points)"
    )


def _fresh(device: str) -> None:
    """Drop what the last point left: its tensors, the allocator's cache, cuBLAS's workspaces."""
    import torch

    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


MARK = 777_777  # bytes of a marker allocation made just before the steps (CPU)


def _built(f: Callable[[], Any], p: Point, device: str, wrap: Callable[[Any], Any] | None) -> Any:
    import torch

    from jupyter_distributed.modelshapes import sample_input
    from jupyter_distributed.worker.measure import make_optimizer

    torch.manual_seed(0)
    with torch.device(device):
        model = f()
    model = wrap(model) if wrap is not None else model
    x = sample_input(model, p.micro, p.seq).to(device)
    return model, make_optimizer("adamw", model.parameters()), x


def _step(model: Any, opt: Any, x: Any) -> None:
    from jupyter_distributed.modelshapes import loss_of

    opt.zero_grad(set_to_none=True)
    loss_of(model(x)).backward()


def train(
    f: Callable[[], Any],
    p: Point,
    device: str,
    repeats: int,
    wrap: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """Real training steps of ``f()`` (wrapped by ``wrap``) at the point's shape on ``device``:
    the median forward+backward and AdamW step seconds after 3 warm-up steps, and the peak
    bytes of the steps (CUDA: ``max_memory_allocated`` after the model is built, and the cuBLAS
    workspace in it; CPU: live tensor bytes, the model and its wrapper's buffers included)."""
    import torch

    _fresh(device)
    model, opt, x = _built(f, p, device, wrap)
    warm, fb, st = 3, [], []
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        events = []
        for i in range(warm + repeats):
            e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            e[0].record()
            _step(model, opt, x)
            e[1].record()
            opt.step()
            e[2].record()
            if i >= warm:
                events.append(e)
        torch.cuda.synchronize()
        fb = [a.elapsed_time(b) / 1e3 for a, b, _ in events]
        st = [b.elapsed_time(c) / 1e3 for _, b, c in events]
        peak, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        held = torch.cuda.memory_allocated()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        workspace = held - torch.cuda.memory_allocated()
    else:
        for i in range(warm + repeats):
            began = time.perf_counter()
            _step(model, opt, x)
            middle = time.perf_counter()
            opt.step()
            if i >= warm:
                fb.append(middle - began)
                st.append(time.perf_counter() - middle)
        del model, opt, x
        peak, reserved, workspace = _cpu_peak(f, p, wrap), 0, 0
    return {
        "peak_bytes": peak, "reserved_bytes": reserved, "workspace_bytes": workspace,
        "fwd_bwd_s": statistics.median(fb), "optimizer_s": statistics.median(st),
    }  # fmt: skip


def _cpu_peak(f: Callable[[], Any], p: Point, wrap: Callable[[Any], Any] | None) -> int:
    """The most live tensor bytes during 2 steps above what was live before the model was
    built (torch's profiler, every thread's allocations counted)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from jupyter_distributed.worker.measure import allocations, every_thread_counted

    gc.collect()
    with (
        every_thread_counted(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        model, opt, x = _built(f, p, "cpu", wrap)
        mark = torch.empty(MARK, dtype=torch.uint8)  # the steps begin
        del mark
        for _ in range(2):
            _step(model, opt, x)
            opt.step()
        del model, opt, x
    events = allocations(prof)
    _, size, held, _, _ = events[0]
    start = held - size
    marks = [i for i, e in enumerate(events) if e[1] == MARK]
    after = events[marks[0] + 2 :] if marks else events
    return max(0, max(e[2] for e in after) - start)


def device_facts(device: str) -> dict[str, Any]:
    """What the advisor reads of this device: its memory (``local_cluster``) and GEMM rate."""
    import torch

    from jupyter_distributed.advise.plan import local_cluster
    from jupyter_distributed.advise.timing import compute_device, gemm_flops, rank_threads

    threads = rank_threads(1)[0]
    out: dict[str, Any] = {"torch": torch.__version__, "advisor_device": compute_device(),
                           "threads": threads}  # fmt: skip
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
    from jupyter_distributed.advise.memory import layout_memory, trace
    from jupyter_distributed.advise.timing import gemm_flops, rank_threads, stage_compute

    f, threads = factory_of(p), rank_threads(1)[0]
    began = time.perf_counter()
    info = from_factory(f, p.seq)
    stages = trace(f, p.micro, p.seq, "adamw")
    memory = layout_memory(stages, info.layer_params, info.parameters, "ddp", 1, 1, False, 0.0)
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
        "memory_error": err(memory.total, peak), "memory_error_less_workspace":
        err(memory.total, peak - ws),
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


def _shard(model: Any) -> Any:
    """FSDP2 as ``shard_model`` wraps a model: each child with parameters, then the root."""
    from torch.distributed.fsdp import fully_shard

    for child in model.children():
        if any(True for _ in child.parameters()):
            fully_shard(child)
    fully_shard(model)
    return model


def _ddp(model: Any) -> Any:
    """DDP with a no-op communication hook (the fake group returns no result for the reducer)."""
    from torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks import noop_hook
    from torch.nn.parallel import DistributedDataParallel

    wrapped = DistributedDataParallel(model)
    wrapped.register_comm_hook(None, noop_hook)
    return wrapped


def layout_b(p: Point, world: int, strategy: str, device: str, repeats: int) -> dict[str, Any]:
    """One rank of ``strategy`` over ``world`` ranks on the fake process group."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from jupyter_distributed.advise.framework import ddp_seconds, fsdp_seconds
    from jupyter_distributed.advise.intake import from_factory
    from jupyter_distributed.advise.memory import layout_memory, trace
    from jupyter_distributed.advise.plan import _collectives
    from jupyter_distributed.advise.timing import rank_threads, stage_compute

    f, threads = factory_of(p), rank_threads(1)[0]
    info = from_factory(f, p.seq)
    stages = trace(f, p.micro, p.seq, "adamw")
    collectives = _collectives()  # the advisor's pick for this device: "nccl" on a GPU

    def predicted(rule: str) -> int:
        return layout_memory(stages, info.layer_params, info.parameters, strategy, world, 1,
                             False, 0.0, 2, rule).total  # fmt: skip

    # the advisor's timing of the wrapped model makes (and destroys) its own process group
    (plain,) = stage_compute(f, 1, p.seq, threads, p.micro)
    if strategy == "fsdp":
        timed = fsdp_seconds(f, p.seq, threads, p.micro, world)
    else:
        ddp = ddp_seconds(f, p.seq, threads, p.micro)
        timed = (ddp, plain.optimizer) if ddp is not None else None
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        got = train(f, p, device, repeats, _shard if strategy == "fsdp" else _ddp)
    finally:
        dist.destroy_process_group()
    pred = predicted(collectives)
    nocopy = predicted("gloo") if strategy == "fsdp" else pred
    step = got["fwd_bwd_s"] + got["optimizer_s"]
    return {
        "layout": f"{strategy} N={world}", "point": p.name, "world": world, "strategy": strategy,
        "collectives": collectives, "predicted_bytes": pred, "predicted_nocopy_bytes": nocopy,
        **got, "memory_error": err(pred, got["peak_bytes"]),
        "memory_error_nocopy": err(nocopy, got["peak_bytes"]),
        "memory_error_nocopy_less_workspace":
        err(nocopy, got["peak_bytes"] - got["workspace_bytes"]),
        "predicted_step_s": sum(timed) if timed else None,
        "step_error": err(sum(timed), step) if timed else None,
    }  # fmt: skip


HEAD_B = (
    f"{'layout':<12} {'point':<32} {'pred GiB':>9} {'err':>7} {'no-copy':>9} {'err':>7} "
    f"{'meas GiB':>9} {'ws MiB':>6} {'err-ws':>7} {'rsv GiB':>8} | {'step pred':>9} "
    f"{'meas ms':>8} {'err':>7}"
)


def row_b(r: dict[str, Any]) -> str:
    pred_step = r["predicted_step_s"]
    return (
        f"{r['layout']:<12} {r['point']:<32} {r['predicted_bytes'] / GIB:>9.4f} "
        f"{pct(r['memory_error'])} {r['predicted_nocopy_bytes'] / GIB:>9.4f} "
        f"{pct(r['memory_error_nocopy'])} {r['peak_bytes'] / GIB:>9.4f} "
        f"{r['workspace_bytes'] / MIB:>6.1f} {pct(r['memory_error_nocopy_less_workspace'])} "
        f"{r['reserved_bytes'] / GIB:>8.3f} | "
        f"{'-' if pred_step is None else f'{1e3 * pred_step:.2f}':>9} "
        f"{1e3 * (r['fwd_bwd_s'] + r['optimizer_s']):>8.2f} {pct(r['step_error'])}"
    )


def _guarded(label: str, run: Callable[[], dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    try:
        rows.append(run())
    except Exception as exc:  # noqa: BLE001 (one failure is printed; the rest still runs)
        print(f"  {label}: FAILED {_first_line(exc)}", flush=True)
        rows.append({"point": label, "error": _first_line(exc)})


def run(
    device: str, quick: bool, repeats: int, budget_s: float, out: Path | None
) -> dict[str, Any]:
    """Every part, each guarded; the results so far are written to ``out`` after each."""
    began = time.perf_counter()
    kind = "quick" if quick else device
    done: dict[str, Any] = {"device": device, "quick": quick, "repeats": repeats}

    def save(part: str, part_began: float) -> None:
        done[f"{part}_s"] = time.perf_counter() - part_began
        print(f"[{part}: {done[f'{part}_s']:.1f} s; {time.perf_counter() - began:.1f} s in all]\n")
        if out is not None:
            out.write_text(json.dumps(done, indent=1, default=str))

    def over(label: str) -> bool:
        if time.perf_counter() - began <= budget_s:
            return False
        print(f"  {label}: SKIPPED (past --budget-s {budget_s:.0f})")
        return True

    t = time.perf_counter()
    print("== device facts the advisor uses ==", flush=True)
    try:
        facts = device_facts(device)
        done["facts"] = facts
        for k, v in facts.items():
            shown = f"{v / GIB:.2f} GiB" if k.startswith(("mem_", "budget_b")) else (
                f"{v / 1e12:.2f} TFLOP/s" if k.endswith("_flops") else v)  # fmt: skip
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
        if not over(p.name):
            _guarded(p.name, lambda p=p: point_a(p, device, repeats), rows_a)
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
                    if "error" not in rows_b[-1]:
                        print(row_b(rows_b[-1]), flush=True)
    ok = [r for r in rows_b if "error" not in r]
    print("  " + summary("memory (advisor's rule)", [r["memory_error"] for r in ok]))
    print("  " + summary("memory (no-copy rule)", [r["memory_error_nocopy"] for r in ok]))
    print("  " + summary("step", [r["step_error"] for r in ok]))
    save("b", t)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="default: cuda where there is one")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="tiny models (a CPU smoke run)")
    parser.add_argument("--repeats", type=int, default=10, help="timed steps after 3 warm-up")
    parser.add_argument("--budget-s", type=float, default=170.0, help="skip points after this")
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
    run(device, args.quick, args.repeats, args.budget_s, args.json)


if __name__ == "__main__":
    main()
