"""Per-cluster corrections learned from ``--verify``: what the measured layouts say about the
cost model on this cluster, kept with the advice run and applied by the next ``advise`` of the
same cluster (its rows then say "calibrated").

Fitted from the verified rows (predicted parts against measured step seconds and peak bytes),
by component, so that a trial of one layout carries to layouts of other shapes:

- ``compute``: the ranks' real share of the cores, measured: each verified rank also times the
  plain model's forward+backward at the layout's microbatch (all ranks at once, the same
  neighbours) after each of its timed steps (``plain_during_s``; rows measured before that
  timed it after all the steps, ``plain_s``), against the advisor's own time of the same
  block; the median ratio scales
  compute, bubble, optimizer and framework alike. Rows without that timing (older runs) fall
  back to least squares below.
- ``communication``: with fewer than 3 rows, the same measured share (a call on these ranks
  waits for the same cores); with 3 or more, least squares of what is left of the measured
  steps once compute is scaled, on the predicted communication, non-negative. Fitting it from
  one trial's residual carried that trial's noise to every layout (on the shared 2-core
  machine, 3 suite runs: held-out median error 60-321 % against 34-134 % with the share; the
  one scalar fitted to the trial's step, the old fit: 49-248 %);
- ``per_kind``: what is left per kind of layout (ddp, fsdp, a 1F1B or a GPipe pipeline, a
  pipeline of one microbatch: see :func:`kind_of`) after those two, for a kind with 2 or more
  rows measured (``--verify``), or with 1 or more in a calibration trial (:mod:`.trial`, which
  measures one layout of each kind so that its corrections carry to the kinds the top layouts
  are not); stored calibrations from before kept ``per_strategy`` (ddp, fsdp, model-parallel),
  still read;
- ``memory``: measured ÷ predicted peak bytes (the allocator's margin on this cluster).

Without the ranks' compute timing: non-negative least squares of both factors over 3 or more
rows; with fewer, or rows that do not tell the two apart, one factor for both.
"""

from __future__ import annotations

import socket
import statistics
from typing import Any

from ..history.store import Store
from .enumerate import ONE_MICRO

COMPUTE = ("compute", "bubble", "optimizer", "framework")
TWO_FACTORS = 3  # rows before compute and communication get factors of their own
PER_STRATEGY = 2  # rows of a strategy before it gets a factor of its own
LIMITS = (0.1, 10.0)  # a factor outside these is a broken measurement, not a correction


def cluster_key(nodes: int, procs_per_node: int) -> str:
    return f"{socket.gethostname()}:{nodes}x{procs_per_node}"


def _clip(x: float) -> float:
    return min(LIMITS[1], max(LIMITS[0], x))


def _split(parts: dict[str, float]) -> tuple[float, float]:
    return sum(parts.get(k, 0.0) for k in COMPUTE), parts.get("communication", 0.0)


def kind_of(row: dict[str, Any]) -> str:
    """A row's kind of layout (as :meth:`Row.to_json` writes it; rows stored before had no
    ``kind``: from its strategy and name; a pipeline of one microbatch stored before it was a
    kind of its own, as GPipe: ``ONE_MICRO`` by its name)."""
    if row.get("strategy") == "model-parallel" and " m=1 " in str(row.get("layout", "")):
        return ONE_MICRO
    if row.get("kind"):
        return str(row["kind"])
    if row["strategy"] != "model-parallel":
        return str(row["strategy"])
    return "model-parallel " + ("GPipe" if "GPipe" in str(row.get("layout", "")) else "1F1B")


def _factor(cal: dict[str, Any], kind: str) -> float:
    """``kind``'s own factor in ``cal``; corrections fitted before a pipeline of one microbatch
    was a kind of its own (``ONE_MICRO``) gave it GPipe's (it was named GPipe), so it still
    gets that from them; then the strategy's (older still); 1 without."""
    per_kind = cal.get("per_kind", {})
    found = per_kind.get(kind)
    if found is None and kind == ONE_MICRO:
        found = per_kind.get("model-parallel GPipe")
    return float(found or cal.get("per_strategy", {}).get(kind.split()[0]) or 1.0)


def fit(rows: list[dict[str, Any]], per_kind_rows: int = PER_STRATEGY) -> dict[str, Any] | None:
    """Corrections from rows as :meth:`Row.to_json` writes them (those with ``measured``);
    the raw prediction is used (a calibrated row's correction is taken off first). A kind of
    layout with ``per_kind_rows`` rows or more gets a factor of its own."""
    done = [r for r in rows if r.get("measured")]
    if not done:
        return None
    xs = [_split(r.get("raw_parts_s") or r["predicted_parts_s"]) for r in done]
    ys = [r["measured"]["step_s"] for r in done]
    shares = [
        ranks / r["measured"]["plain_predicted_s"]
        for r in done
        if (ranks := share_seconds(r["measured"])) and r["measured"].get("plain_predicted_s")
    ]
    if shares:
        a = _clip(statistics.median(shares))
        b = _on_residual(xs, ys, a) if len(done) >= TWO_FACTORS else a
    else:
        a, b = _nnls2(xs, ys)
    kinds: dict[str, list[float]] = {}
    for (c, m), y, r in zip(xs, ys, done, strict=True):
        kinds.setdefault(kind_of(r), []).append(y / max(1e-12, a * c + b * m))
    kinds = {k: v for k, v in kinds.items() if len(v) >= per_kind_rows}
    memory = [
        r["measured"]["gib"] * 2**30 / max(1, _raw_bytes(r)) for r in done if r["measured"]["gib"]
    ]
    return {
        "compute": a,
        "communication": b,
        "per_kind": {k: _clip(statistics.median(v)) for k, v in kinds.items()},
        "memory": _clip(max(memory)) if memory else 1.0,
        "layouts": len(done),
    }


def share_seconds(measured: dict[str, Any]) -> float:
    """The ranks' time of the plain block: timed between the steps (``plain_during_s``, the
    load while they ran) where the row has it, else after them (``plain_s``); 0 without."""
    return float(measured.get("plain_during_s") or measured.get("plain_s") or 0.0)


def _raw_bytes(row: dict[str, Any]) -> int:
    parts = row.get("raw_bytes") or row["predicted_bytes"]
    return int(sum(v for k, v in parts.items() if k != "margin"))


def _on_residual(xs: list[tuple[float, float]], ys: list[float], a: float) -> float:
    """The communication factor once compute is scaled by ``a``: least squares of what is left
    of each step on its predicted communication, non-negative (1 with no communication)."""
    smm = sum(m * m for _, m in xs)
    if smm <= 0:
        return 1.0
    return _clip(sum(m * (y - a * c) for (c, m), y in zip(xs, ys, strict=True)) / smm)


def _nnls2(xs: list[tuple[float, float]], ys: list[float]) -> tuple[float, float]:
    """min Σ(a·c + b·m − y)² with a, b ≥ 0; one shared factor when the rows cannot tell
    compute from communication apart."""
    scc = sum(c * c for c, _ in xs)
    smm = sum(m * m for _, m in xs)
    scm = sum(c * m for c, m in xs)
    scy = sum(c * y for (c, _), y in zip(xs, ys, strict=True))
    smy = sum(m * y for (_, m), y in zip(xs, ys, strict=True))
    det = scc * smm - scm * scm
    if len(xs) >= TWO_FACTORS and det > 1e-6 * scc * smm:
        a, b = (scy * smm - smy * scm) / det, (smy * scc - scy * scm) / det
        if a > 0 and b > 0:
            return _clip(a), _clip(b)
    totals = [c + m for c, m in xs]
    one = sum(t * y for t, y in zip(totals, ys, strict=True)) / max(
        1e-24, sum(t * t for t in totals)
    )
    return _clip(one), _clip(one)


def newest(store: Store, key: str) -> dict[str, Any] | None:
    """The newest corrections fitted on cluster ``key`` (with the advice run they came from)."""
    for listed in store.runs(limit=500):
        summary = listed.summary
        if summary.get("kind") != "advice":
            continue
        run = store.run(listed.id)
        found = (run.summary if run is not None else {}).get("calibration")
        if isinstance(found, dict) and found.get("cluster") == key:
            return {**found, "run": listed.id}
    return None


def apply(parts: dict[str, float], kind: str, cal: dict[str, Any]) -> dict[str, float]:
    """``parts`` of a layout of ``kind`` (:func:`kind_of`) corrected by ``cal``."""
    extra = _factor(cal, kind)
    return {
        k: v * extra * (cal["communication"] if k == "communication" else cal["compute"])
        for k, v in parts.items()
    }


def calibrated_note(cal: dict[str, Any]) -> str:
    per_kind = cal.get("per_kind") or cal.get("per_strategy") or {}
    per = ", ".join(f"{k} ×{v:.2f}" for k, v in sorted(per_kind.items()))
    trial = cal.get("trial")
    how = "a calibration trial (--calibrate)" if trial else "--verify"
    took = f", {trial['seconds']:.0f} s" if trial else ""
    return (
        f"CALIBRATED on this cluster by {how} of advice run {cal.get('run', '?')} "
        f"({cal.get('layouts', 0)} layouts measured{took}): compute ×{cal['compute']:.2f}, "
        f"communication ×{cal['communication']:.2f}"
        + (f", per kind {per}" if per else "")
        + f", memory ×{cal['memory']:.2f}"
    )
