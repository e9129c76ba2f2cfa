"""Pulled values as data (a SageMaker job's default): what round-trips, and bytes crafted to run
code on load are refused without running it (M1)."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jupyter_distributed.protocol.datavalues import NotData, decode, encode


class _Runs:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_json_like_values_numpy_and_torch_round_trip() -> None:
    torch = pytest.importorskip("torch")
    values = {
        "i": 2**70,
        "f": float("inf"),
        "s": "ü\n",
        "t": (1, [None, True], {"k": b"\x00"}),
        "sets": [{1, 2}, frozenset({"a"})],
        "c": 1 + 2j,
        "a": np.arange(4, dtype=">i2").reshape(2, 2),
        "rec": np.zeros(2, dtype=[("x", "<f4"), ("y", "<i8")]),
        "n": np.float16(1.5),
        "w": torch.ones(2, 3) * 3,
    }
    frames, errors = encode(values)
    assert errors == {}
    back = decode(frames)
    assert {k: back[k] for k in ("i", "f", "s", "t", "sets", "c")} == {
        k: values[k] for k in ("i", "f", "s", "t", "sets", "c")
    }
    for name in ("a", "rec"):
        assert back[name].dtype == values[name].dtype
        np.testing.assert_array_equal(back[name], values[name])
    assert back["n"] == np.float16(1.5) and type(back["n"]) is np.float16
    assert torch.equal(back["w"], values["w"])


def test_what_is_not_data_is_named_and_the_rest_is_sent() -> None:
    frames, errors = encode({"ok": 1, "f": print, "objects": np.array([object()])})
    assert decode(frames) == {"ok": 1}
    assert set(errors) == {"f", "objects"}
    assert all("--trust-pickle" in why for why in errors.values())


def test_bytes_crafted_to_run_code_are_refused_in_one_line(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    marker = tmp_path / "ran"
    hostile_npy = io.BytesIO()
    np.save(hostile_npy, np.array([_Runs(marker)], dtype=object), allow_pickle=True)
    hostile_torch = io.BytesIO()
    torch.save({"w": _Runs(marker)}, hostile_torch)
    tree = json.dumps({"x": {"ndarray": 0}}).encode()
    cases = [
        [pickle.dumps({"x": _Runs(marker)})],
        [tree, hostile_npy.getvalue()],
        [json.dumps({"x": {"tensor": 0}}).encode(), hostile_torch.getvalue()],
        [json.dumps({"x": {"pickle": 0}}).encode(), pickle.dumps(_Runs(marker))],
        [tree],  # a blob that is not there
    ]
    for frames in cases:
        with pytest.raises(NotData) as refused:
            decode(frames)
        assert "\n" not in str(refused.value)
    assert not marker.exists()
