"""``report()`` samples travel as one restricted binary batch and are checked in the kernel."""

from __future__ import annotations

import pickle
from decimal import Decimal
from typing import Any

import pytest

from jupyter_distributed.protocol.metrics import numeric, pack_samples, unpack_samples

from .core_helpers import shell  # noqa: F401

pytestmark = pytest.mark.timeout(120)


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


def test_batch_round_trip_turns_other_values_into_floats_or_text() -> None:
    batch = [(1.5, {"a": 1, "b": 2.5, "c": Decimal("0.25"), "d": Opaque(), "e": "7", "f": int})]
    assert unpack_samples(pack_samples(batch)) == [
        (1.5, {"a": 1, "b": 2.5, "c": 0.25, "d": "Opaque()", "e": "7", "f": "<class 'int'>"})
    ]
    values, bad = numeric(unpack_samples(pack_samples(batch))[0][1])
    assert values == {"a": 1.0, "b": 2.5, "c": 0.25, "e": 7.0}
    assert bad == [("d", "Opaque()"), ("f", "<class 'int'>")]


def test_batch_with_any_other_global_is_refused() -> None:
    with pytest.raises(pickle.UnpicklingError, match=r"posix\.system is not allowed"):
        unpack_samples(b"cposix\nsystem\n(S'true'\ntR.")
    with pytest.raises(pickle.UnpicklingError, match="must be a list"):
        unpack_samples(pickle.dumps({"not": "a list"}))


def test_numpy_scalars_and_bad_values_through_real_ranks(shell: Any, capsys: Any) -> None:  # noqa: F811
    session = shell.user_ns["_jd_session"]
    cell = (
        "import numpy as np\n"
        "for i in range(3):\n"
        "    report(loss=np.float32(0.5) * i, step=np.int64(i), note=object())"
    )
    assert shell.run_cell(f"%%distributed -n 2\n{cell}").success
    run_id = session.store.runs(limit=1)[0].id
    samples = [m for _, m in session.store.metrics(run_id) if "step" in m.values]
    assert sorted((m.rank, m.values["step"], m.values["loss"]) for m in samples) == [
        (r, float(i), 0.5 * i) for r in (0, 1) for i in range(3)
    ]
    assert all("note" not in m.values for m in samples)
    warnings = [
        line
        for line in session.store.logs(run_id, stream="stderr")
        if "is not a number" in line.text
    ]
    assert sorted(w.rank for w in warnings) == [0, 1]  # once per rank
    assert "report(): note='<object object at" in warnings[0].text
