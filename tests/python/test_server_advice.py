"""An advice (``%distributed advise``) through a real Jupyter server: stored as a run of its own
kind, it is listed with the runs and read alone with its layouts, and names the cluster, the
notebook and the kernel it was asked from, as the panel's Scaling tab and its New cell button
need them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.advise.intake import Analytic
from jupyter_distributed.advise.plan import advise
from jupyter_distributed.advise.store import save
from jupyter_distributed.history.store import Store

from .test_server_api import API, Fetch, jp_server_config, store, store_path  # noqa: F401

pytest.importorskip("torch")  # (the advisor times a GEMM with it)


async def test_an_advice_is_listed_and_read_with_its_layouts_and_its_cluster(
    jp_fetch: Fetch,
    store: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    notebook = str(tmp_path / "train.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", notebook)
    numbers = Analytic(100_000, 2, 64, 4, 512, "fp32")
    advice = advise(global_batch=8, seq=16, procs_per_node=1, numbers=numbers)
    line = "%distributed advise --global-batch 8 --seq 16 -n 1 --cluster c-7"
    run_id = save(store, advice, line, cluster_id="c-7")

    (listed,) = json.loads((await jp_fetch(*API, "runs")).body)["runs"]
    assert listed["id"] == run_id
    assert (listed["state"], listed["ranks"], listed["source"]) == ("completed", [], line)
    # the cluster it was asked for and where it was asked: the panel matches and inserts by them
    assert (listed["cluster_id"], listed["notebook"]) == ("c-7", notebook)
    summary: dict[str, Any] = listed["summary"]
    assert summary["kind"] == "advice"
    layouts = summary["advice"]["layouts"]
    assert [r["launch"] for r in layouts] == [r.launch for r in advice.layouts]
    assert layouts[0]["launch"] == "%%distributed -n 1 --strategy ddp"
    for r in layouts:  # what the panel's table shows, every number labelled predicted
        assert r["predicted_gib"] > 0 and r["predicted_step_s"] > 0
        assert r["predicted_samples_per_s"] > 0 and r["dominant"]
        assert r["measured"] is None
    assert summary["advice"]["inputs"]["traced"] is False  # the analytic fallback says so

    detail = json.loads((await jp_fetch(*API, "runs", run_id)).body)
    assert detail["ranks"] == []
    whole = detail["run"]["summary"]["advice"]
    assert whole["layouts"] == [r.to_json() for r in advice.layouts]  # the run alone: all of it
    # the list, polled every 2 s, carries what the panel shows of each layout and no more
    assert {**whole, "layouts": layouts} == summary["advice"]
    assert all("raw_bytes" not in r and "predicted_bytes" not in r for r in layouts)
    assert len(json.dumps(layouts)) < len(json.dumps(whole["layouts"])) / 2
