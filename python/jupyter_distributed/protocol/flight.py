"""torch's flight recorder, summarised per process group (standard library only).

A rank with ``torch.distributed`` initialised and ``TORCH_FR_BUFFER_SIZE`` set records its last
collectives; ``_dump_fr_trace_json`` (``_dump_nccl_trace_json`` on NCCL builds) returns them as
JSON. :func:`summarize` keeps what a hang diagnosis needs: each group's last enqueued, started and
completed sequence ids and the collectives still active (not retired, not completed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DEFAULT_PG = "default_pg"
LABEL = "(torch flight recorder)"  # marks the diagnosis lines of per-rank sequence ids
_PREFIXES = ("gloo:", "nccl:", "ucc:", "mpi:", "xccl:")


@dataclass(frozen=True)
class Collective:
    """One collective a rank entered: its sequence id in its group, the op and input sizes."""

    seq: int
    op: str  # all_reduce, broadcast, ... (the backend's prefix stripped)
    sizes: tuple[tuple[int, ...], ...] = ()

    def to_json(self) -> list[Any]:
        return [self.seq, self.op, [list(s) for s in self.sizes]]

    @classmethod
    def from_json(cls, data: Any) -> Collective:
        seq, op, sizes = [*list(data), []][:3]
        return cls(int(seq), str(op), tuple(tuple(int(n) for n in s) for s in sizes or ()))


@dataclass(frozen=True)
class GroupFlight:
    """One process group's view on one rank. Ids are -1 when none happened (or unknown)."""

    group: str  # the group's name: default_pg, or the name torch gave a new_group
    enqueued: int = -1
    started: int = -1
    completed: int = -1
    active: tuple[Collective, ...] = ()

    @property
    def last(self) -> int:
        """The last collective this rank entered in the group."""
        return max(self.enqueued, max((c.seq for c in self.active), default=-1))

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "enqueued": self.enqueued,
            "started": self.started,
            "completed": self.completed,
            "active": [c.to_json() for c in self.active],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GroupFlight:
        return cls(
            str(data.get("group", "")),
            int(data.get("enqueued", -1)),
            int(data.get("started", -1)),
            int(data.get("completed", -1)),
            tuple(Collective.from_json(c) for c in data.get("active") or ()),
        )


def op_name(profiling_name: str) -> str:
    for prefix in _PREFIXES:
        if profiling_name.startswith(prefix):
            return profiling_name[len(prefix) :]
    return profiling_name


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def summarize(dump: bytes | str | dict[str, Any]) -> tuple[GroupFlight, ...]:
    """The groups of one flight-recorder dump, by group id; raises ValueError when unreadable."""
    data = json.loads(dump) if isinstance(dump, (bytes, str)) else dump
    if not isinstance(data, dict):
        raise ValueError("a flight-recorder dump is a JSON object")
    names: dict[str, str] = {}
    active: dict[str, list[Collective]] = {}
    for entry in data.get("entries") or ():
        pg = entry.get("process_group") or [str(entry.get("pg_id", "0")), ""]
        pg_id, name = str(pg[0]), str(pg[1] if len(pg) > 1 else "")
        if name:
            names[pg_id] = name
        if entry.get("retired") or entry.get("state") == "completed" or entry.get("is_p2p"):
            continue
        sizes = tuple(tuple(int(n) for n in s) for s in entry.get("input_sizes") or ())
        seq = _int(entry.get("collective_seq_id"))
        op = op_name(str(entry.get("profiling_name", "")))
        active.setdefault(pg_id, []).append(Collective(seq, op, sizes))
    status: dict[str, Any] = dict(data.get("pg_status") or {})
    out: list[GroupFlight] = []
    for pg_id in sorted(set(status) | set(active), key=lambda k: (len(k), k)):
        s = status.get(pg_id) or {}
        name = names.get(pg_id) or (DEFAULT_PG if pg_id == "0" else f"group {pg_id}")
        out.append(
            GroupFlight(
                name,
                _int(s.get("last_enqueued_collective")),
                _int(s.get("last_started_collective")),
                _int(s.get("last_completed_collective")),
                tuple(sorted(active.get(pg_id, ()), key=lambda c: c.seq)),
            )
        )
    return tuple(out)
