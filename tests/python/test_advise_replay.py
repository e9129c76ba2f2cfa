"""The advisor's cost model on given hardware numbers (``advise/given.py``), and the published
replays' data (``benchmarks/replays``): every file loads and every row names its source."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from jupyter_distributed.advise import given
from jupyter_distributed.advise.intake import AdviseError

REPLAYS = Path(__file__).resolve().parents[2] / "benchmarks" / "replays"
HW = {
    "name": "test",
    "peak_flops": 100e12,
    "procs_per_node": 8,
    "intra": {"bandwidth_Bps": 100e9, "latency_s": 5e-6},
    "inter": {"bandwidth_Bps": 10e9, "latency_s": 20e-6},
}


def test_compute_is_the_papers_flops_at_the_given_peak() -> None:
    hw = given.Hardware.from_json(HW)
    m = given.Transformer(hidden=1024, heads=16, layers=4, seq=512)
    parts, _, tp_s = given.step(m, given.Layout("megatron", 1, 1, 1, 2, 2, "none"), hw)
    b, s, h, layers = 2, 512, 1024, 4
    flops = 72 * b * s * layers * h * h * (1 + s / (6 * h))  # fwd + bwd, no recomputation
    assert parts["compute"] == pytest.approx(flops / 100e12)
    assert parts["communication"] == 0 and tp_s == 0
    full = given.step(m, given.Layout("megatron", 1, 1, 1, 2, 2, "full"), hw)[0]
    assert full["compute"] == pytest.approx(parts["compute"] * 4 / 3)


def test_tensor_parallel_costs_its_all_reduces_on_the_given_links() -> None:
    hw = given.Hardware.from_json(HW)
    m = given.Transformer(hidden=1024, heads=16, layers=4, seq=512)
    one = given.step(m, given.Layout("megatron", 1, 1, 1, 1, 1, "none"), hw)[0]["compute"]
    parts, _, tp_s = given.step(m, given.Layout("megatron", 1, 4, 1, 1, 1, "none"), hw)
    nbytes = 512 * 1024 * 2
    call = 2 * 3 / 4 * nbytes / 100e9 + 2 * 3 * 5e-6  # ring all-reduce over 4, intra-node
    assert tp_s == pytest.approx(4 * 4 * call)  # 4 per layer (2 forward, 2 backward)
    assert parts["compute"] == pytest.approx(one / 4 + tp_s)


def test_given_links_replace_the_probe() -> None:
    links = given.Hardware.from_json(HW).links()
    assert links.bandwidth == {"intra": 100e9, "inter": 10e9}
    assert links.p2p(10e9, True) == pytest.approx(20e-6 + 1.0)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"peak_flops": -1}, "must be positive"),
        ({"inter": {"bandwidth_Bps": 1e9}}, "missing or bad field"),
        ({"efficiency": 1.5}, "efficiency in (0, 1]"),
    ],
)
def test_bad_hardware_is_one_line(change: dict[str, Any], says: str) -> None:
    with pytest.raises(AdviseError, match=r"^hardware: .*") as err:
        given.Hardware.from_json(HW | change)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_layout_the_model_cannot_cost_is_one_line() -> None:
    hw = given.Hardware.from_json(HW)
    m = given.Transformer(hidden=64, heads=4, layers=4, seq=16)
    with pytest.raises(AdviseError, match="not a whole number of microbatches"):
        given.step(m, given.Layout("megatron", 3, 1, 1, 1, 8), hw)
    with pytest.raises(AdviseError, match="do not split into 3 equal stages"):
        given.step(m, given.Layout("megatron", 1, 1, 3, 1, 3), hw)
    with pytest.raises(AdviseError, match="without model parallelism or accumulation"):
        given.step(m, given.Layout("zero3", 2, 1, 1, 1, 4), hw)


def _bench() -> ModuleType:
    path = REPLAYS.parent / "bench_replay.py"
    spec = importlib.util.spec_from_file_location("bench_replay", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_every_replay_row_names_its_source_and_loads() -> None:
    files = sorted(REPLAYS.glob("*.json"))
    assert files
    rows = 0
    for path in files:
        doc = json.loads(path.read_text())
        for key in ("source", "citation", "url", "where", "measure", "hardware"):
            assert doc.get(key), f"{path.name}: no {key}"
        assert doc["hardware"].get("sources"), f"{path.name}: hardware without sources"
        given.Hardware.from_json(doc["hardware"])
        if "rows" in doc:
            found = doc["rows"]
            named = [r["source"].startswith(doc["source"] + " ") for r in found]
        else:
            with (REPLAYS / doc["rows_csv"]).open() as f:
                found = list(csv.DictReader(f))
            named = [r["source"] in doc["row_sources"] for r in found]
        assert found and all(named), f"{path.name}: a row without its source"
        for r in found:
            assert r.get("published") or r.get("step_ms"), f"{path.name}: {r} publishes nothing"
        rows += len(found)
    cases = _bench().load(REPLAYS)
    assert len(cases) == rows
    assert all(c.published_s > 0 for c in cases)
