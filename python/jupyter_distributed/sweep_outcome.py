"""What a ``--sweep`` cell ends with: each combination's result (its run, state, time and pulled
values), the table of them all, and the error naming the combinations that failed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import DistributedError
from .events import RunState
from .sweeps import Combination, label


class SweepFailed(DistributedError):
    """Some combinations of a sweep failed (the others completed)."""


@dataclass
class ComboResult:
    combo: Combination
    run_id: str = ""
    state: RunState = RunState.PENDING
    message: str = ""
    seconds: float = 0.0
    pulled: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepOutcome:
    sweep_id: str
    parallel: int
    results: list[ComboResult]

    def table(self) -> str:
        done = sum(r.state is RunState.COMPLETED for r in self.results)
        lines = [
            f"sweep {self.sweep_id}: {len(self.results)} combination(s), {self.parallel} at a "
            f"time; {done} completed"
        ]
        width = max(len(label(r.combo)) for r in self.results)
        for r in self.results:
            lines.append(
                f"  {label(r.combo):<{width}}  {r.run_id or '-':<24} {r.state.value:<11} "
                f"{r.seconds:6.1f}s  {r.message.splitlines()[0] if r.message else ''}".rstrip()
            )
        return "\n".join(lines)
