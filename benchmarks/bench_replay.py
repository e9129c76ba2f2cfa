"""Published layouts replayed through the advisor's cost model, offline, with each paper's own
hardware numbers (``advise/given.py``: a peak FLOP/s and a latency and bandwidth per link class
instead of a GEMM timed here and a probe).

Run: ``python benchmarks/bench_replay.py [--rows all|small|none] [--json out.json]``.

Data: ``benchmarks/replays/*.json`` (and the CSV one names), each with its source, the table
or file, the hardware as the source states it, and per layout the model's numbers, dp/tp/pp,
microbatch and global batch, schedule, recomputation and the published step time or
throughput. Published throughput (TFLOP/s per GPU) becomes seconds per step through the same
paper's FLOP count (Narayanan et al., Eq. 3).

Printed: per layout, predicted against published step time and the error; per source, the
median and worst |error| before any trial (GEMMs at the published peak: the step-time floor of
the model) and after one calibration trial (the advisor's ``calibrate.fit`` on the source's
first row only, scored on the rest); and per group of layouts of the same model, GPU count and
global batch (2 or more), whether the predicted top pick is within 5 % of the published best and
whether that best is in the predicted top 3 (calibration scales a source uniformly, so it
changes no ranking). No memory: the sources publish none.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout

use_checkout()
from jupyter_distributed.advise.calibrate import apply, fit  # noqa: E402
from jupyter_distributed.advise.given import Hardware, Layout, Transformer, step  # noqa: E402

DATA = Path(__file__).resolve().parent / "replays"
WITHIN = 0.05


@dataclass(frozen=True)
class Case:
    source: str  # the data file's source key
    row_source: str  # what the row itself names
    model: Transformer
    layout: Layout
    published_s: float
    group: str
    hardware: Hardware


def published_seconds(row: dict[str, Any], m: Transformer) -> float:
    pub = row["published"]
    if "step_s" in pub:
        return float(pub["step_s"])
    b, s, layers, h, v = row["global_batch"], m.seq, m.layers, m.hidden, m.vocab
    flops = 96 * b * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))  # Eq. 3
    return float(flops / (row["gpus"] * float(pub["tflops_per_gpu"]) * 1e12))


def _rows(doc: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    if "rows" in doc:
        return list(doc["rows"])
    out = []
    with (path.parent / doc["rows_csv"]).open() as f:
        for r in csv.DictReader(f):
            row: dict[str, Any] = {
                k: int(v) for k, v in r.items() if k not in ("source", "step_ms")
            }
            row |= {"source": r["source"], "published": {"step_s": float(r["step_ms"]) / 1e3}}
            out.append(doc.get("defaults", {}) | row)
    return out


def load(data: Path = DATA) -> list[Case]:
    cases = []
    for path in sorted(data.glob("*.json")):
        doc = json.loads(path.read_text())
        hw = Hardware.from_json(doc["hardware"])
        for row in _rows(doc, path):
            m = Transformer(row["hidden"], row["heads"], row["layers"], row["seq"], row["vocab"])
            lay = Layout(row["strategy"], row["dp"], row["tp"], row["pp"], row["micro_batch"],
                         row["global_batch"], row["recompute"])  # fmt: skip
            group = (
                f"{row['source']} h{m.hidden} l{m.layers} {row['gpus']} GPUs B{lay.global_batch}"
            )
            cases.append(Case(doc["source"], row["source"], m, lay,
                              published_seconds(row, m), group, hw))  # fmt: skip
    return cases


def describe(c: Case) -> str:
    lay = c.layout
    kind = "ZeRO-3" if lay.strategy == "zero3" else f"t{lay.tp} p{lay.pp} d{lay.dp}"
    where = c.group.split(" h")[0]
    return f"{where}: h{c.model.hidden} l{c.model.layers} {kind} b{lay.micro} {lay.recompute}"


def score(cases: list[Case]) -> dict[str, Any]:
    predicted, parts, tp = [], [], []
    for c in cases:
        p, _, tp_s = step(c.model, c.layout, c.hardware)
        parts.append(p)
        predicted.append(sum(p.values()))
        tp.append(tp_s)
    cal_pred: list[float | None] = [None] * len(cases)
    factors: dict[str, float] = {}
    for src in dict.fromkeys(c.row_source for c in cases):
        first = next(i for i, c in enumerate(cases) if c.row_source == src)
        row = {"predicted_parts_s": parts[first], "strategy": "given",
               "measured": {"step_s": cases[first].published_s, "gib": 0}}  # fmt: skip
        cal = fit([row])
        assert cal is not None
        factors[src] = cal["compute"]
        for i, c in enumerate(cases):
            if c.row_source == src and i != first:
                cal_pred[i] = sum(apply(parts[i], "given", cal).values())
    return {
        "predicted": predicted,
        "parts": parts,
        "tensor_parallel": tp,  # seconds of the step's TP all-reduce (within compute and bubble)
        "calibrated": cal_pred,
        "factors": factors,
    }


def groups(cases: list[Case], predicted: list[float]) -> list[dict[str, Any]]:
    by: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        by.setdefault(c.group, []).append(i)
    out = []
    for name, idx in by.items():
        if len(idx) < 2:
            continue
        best = min(idx, key=lambda i: cases[i].published_s)
        order = sorted(idx, key=lambda i: predicted[i])
        top = order[0]
        out.append({
            "group": name, "source": cases[idx[0]].row_source, "layouts": len(idx),
            "top_within": cases[top].published_s <= (1 + WITHIN) * cases[best].published_s,
            "best_in_top3": best in order[:3],
            "top_off": cases[top].published_s / cases[best].published_s - 1,
        })  # fmt: skip
    return out


def _err(p: float, m: float) -> float:
    return p / m - 1


def summary(name: str, errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    if not a:
        return f"{name}: no rows"
    return (f"{name}: median |error| {100 * statistics.median(a):.1f} %, worst "
            f"{100 * max(a):.1f} % ({len(a)} layouts)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rows",
        choices=("all", "small", "none"),
        default="small",
        help="print every layout, or all but vTrain's 1440 single-node ones",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cases = load()
    s = score(cases)
    if args.rows != "none":
        print(f"{'layout':<62} {'published s':>11} {'predicted s':>11} {'error':>7} "
              f"{'calibrated':>10} {'error':>7}  dominant")  # fmt: skip
        rows = zip(
            cases, s["predicted"], s["calibrated"], s["parts"], s["tensor_parallel"], strict=True
        )
        for c, p, q, parts, tp_s in rows:
            if args.rows == "small" and c.row_source == "vtrain-single":
                continue
            trial = (
                f"{q:10.3f} {100 * _err(q, c.published_s):+6.1f}%"
                if q is not None
                else f"{'(trial)':>10} {'':>7}"
            )
            dom = max(parts, key=lambda k: parts[k])
            print(f"{describe(c):<62} {c.published_s:11.3f} {p:11.3f} "
                  f"{100 * _err(p, c.published_s):+6.1f}% {trial}  {dom} "
                  f"{100 * parts[dom] / p:.0f} %"
                  + (f" (TP all-reduce {100 * tp_s / p:.0f} %)" if tp_s else ""))  # fmt: skip
    print()
    for src in dict.fromkeys(c.row_source for c in cases):
        mine = [i for i, c in enumerate(cases) if c.row_source == src]
        raw = [_err(s["predicted"][i], cases[i].published_s) for i in mine]
        cal = [_err(q, cases[i].published_s) for i in mine if (q := s["calibrated"][i]) is not None]
        print(summary(f"{src} before any trial", raw))
        print(summary(f"{src} after one trial", cal))
    raw = [_err(p, c.published_s) for p, c in zip(s["predicted"], cases, strict=True)]
    cal = [
        _err(q, c.published_s) for q, c in zip(s["calibrated"], cases, strict=True) if q is not None
    ]
    print(summary("ALL before any trial", raw))
    print(summary("ALL after one trial (held out)", cal))
    print(
        "calibration factors (one trial per table or file):",
        ", ".join(f"{k} ×{v:.2f}" for k, v in s["factors"].items()),
    )
    g = groups(cases, s["predicted"])
    print()
    for src in dict.fromkeys(x["source"] for x in g):
        ours = [x for x in g if x["source"] == src]
        within = sum(x["top_within"] for x in ours)
        top3 = sum(x["best_in_top3"] for x in ours)
        worst = max(x["top_off"] for x in ours)
        print(
            f"ranking {src}: {len(ours)} groups; top pick within 5 % of the published best in "
            f"{within}, best in top 3 in {top3}; worst top pick {100 * worst:+.1f} % slower"
        )
    if args.rows != "none":
        for x in g:
            if x["source"] != "vtrain-single" or args.rows == "all":
                print(
                    f"  {x['group']:<48} {x['layouts']:3d} layouts  top pick "
                    f"{100 * x['top_off']:+6.1f} %  best in top 3: {x['best_in_top3']}"
                )
    if args.json:
        args.json.write_text(json.dumps({"score": {k: v for k, v in s.items() if k != "parts"},
                                         "groups": g}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
