"""Errors of jupyter-distributed. Failures are data; the root cause comes first.

::

    DistributedError            base of everything we raise on purpose
    ├── SpecError               bad settings; the magic shows it as a one-line UsageError
    ├── LaunchError             a cluster could not start (a rank died or never said hello)
    ├── StoreError              the history store cannot be read or written (names its path)
    ├── NotFound                no such run, cluster or job (also a LookupError)
    ├── CloudError              a cloud call (AWS) failed; names the call and the cloud's error
    └── RunFailed               ranks failed (every RankFailure, earliest first) or the run was
                                lost (its cause: a full history store, a dead channel)

A :class:`RankFailure` says which rank failed, where, and how: a Python exception with its
remote traceback, an exit code, a signal, a timeout or an interrupt.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

from .collapse import ranks_text


class DistributedError(Exception):
    """Base class; the message is meant for the user as it is."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows this one line instead of our own frames."""
        return [f"{type(self).__name__}: {self}"]


class SpecError(DistributedError, ValueError):
    """The settings are invalid; the message says what to change."""


class LaunchError(DistributedError):
    """A cluster could not be started."""


class StoreError(DistributedError):
    """The history store failed; the message names its path and what to do."""


class NotFound(DistributedError, LookupError):
    """The run, cluster or job asked for is not there; the message says which."""


class CloudError(DistributedError):
    """A call to the cloud (AWS) failed; the message names it and the cloud's error."""


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(frozen=True)
class RankFailure:
    """How one rank failed. ``t`` orders failures: the earliest is the root cause."""

    rank: int
    t: float
    host: str = ""
    pid: int | None = None
    ename: str = ""
    evalue: str = ""
    traceback: tuple[str, ...] = ()
    exit_code: int | None = None
    signal: int | None = None
    kind: str = "exception"  # exception | exit | timeout | interrupted | relay (a dead node)
    # who sent the signal, when known ("the out-of-memory killer (RSS 21.3 GiB of 23.4 GiB
    # just before)"); lines that follow the traceback (a CUDA out-of-memory's memory picture);
    # the rank's last lines of output before it died
    cause: str = ""
    notes: tuple[str, ...] = ()
    last_lines: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        if self.kind == "relay":  # (rank -1: the relay's node and ranks are in evalue)
            return self.evalue
        where = f"rank {self.rank}" + (f" on {self.host}" if self.host else "")
        where += f" (pid {self.pid})" if self.pid else ""
        return f"{where} {self.what}"

    @property
    def what(self) -> str:
        """What happened, without which rank: ``raised ValueError: bad``."""
        if self.kind == "exit":
            if self.signal is not None:
                return f"was killed by {self.cause or signal_name(self.signal)}"
            return f"exited with code {self.exit_code}"
        if self.kind == "timeout":
            return f"timed out: {self.evalue}"
        if self.kind == "interrupted":
            return "was interrupted"
        return f"raised {self.ename}: {self.evalue}"

    @property
    def alike(self) -> tuple[Any, ...]:
        """What two ranks' failures share when they are the same, whatever rank, host or pid."""
        if self.kind == "relay":
            return (self.kind, self.evalue)
        return (self.kind, self.ename, self.evalue, self.traceback, self.exit_code,
                self.signal, self.cause, self.notes)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "t": self.t,
            "host": self.host,
            "pid": self.pid,
            "ename": self.ename,
            "evalue": self.evalue,
            "traceback": list(self.traceback),
            "exit_code": self.exit_code,
            "signal": self.signal,
            "kind": self.kind,
            # (only when known: older readers and the wire fixtures see the same object)
            **({"cause": self.cause} if self.cause else {}),
            **({"notes": list(self.notes)} if self.notes else {}),
            **({"last_lines": list(self.last_lines)} if self.last_lines else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankFailure:
        return cls(
            rank=int(data["rank"]),
            t=float(data["t"]),
            host=str(data.get("host", "")),
            pid=data.get("pid"),
            ename=str(data.get("ename", "")),
            evalue=str(data.get("evalue", "")),
            traceback=tuple(data.get("traceback", ())),
            exit_code=data.get("exit_code"),
            signal=data.get("signal"),
            kind=str(data.get("kind", "exception")),
            cause=str(data.get("cause", "")),
            notes=tuple(str(n) for n in data.get("notes", ())),
            last_lines=tuple(str(n) for n in data.get("last_lines", ())),
        )

    def details(self) -> list[str]:
        """What follows the summary: the traceback (or the stack a fatal signal left), the
        notes, then the rank's last lines."""
        lines = [line.rstrip("\n") for line in (*self.traceback, *self.notes)]
        if self.last_lines:
            lines.append(f"last {len(self.last_lines)} line(s) of rank {self.rank}:")
            lines.extend(f"  | {line}" for line in self.last_lines)
        return lines


@dataclass
class RunFailed(DistributedError):
    """One or more ranks failed. IPython renders it with the root cause's remote traceback."""

    failures: list[RankFailure] = field(default_factory=list)
    run_id: str = ""
    cause: str = ""  # why the run failed when no rank did (e.g. the history store is full)

    def __post_init__(self) -> None:
        self.failures.sort(key=lambda f: (f.t, f.rank))
        super().__init__(self.headline)

    @property
    def root(self) -> RankFailure:
        return self.failures[0]

    @property
    def headline(self) -> str:
        if not self.failures:
            return self.cause or "the run failed"
        more = len(self.failures) - 1
        tail = f" (and {more} more rank{'s' if more > 1 else ''})" if more else ""
        return f"{self.root.summary}{tail}"

    def _render_traceback_(self) -> list[str]:
        """Called by IPython instead of showing our own frames."""
        lines = [f"RunFailed: {self.headline}", ""]
        if self.cause and self.failures:
            lines += [f"--- also: {self.cause}", ""]
        for i, group in enumerate(self._groups()):
            f = group[0]
            if len(group) == 1:
                label = "root cause" if i == 0 else "also"
                lines.append(f"--- [rank {f.rank}] {label}: {f.summary}")
                details = f.details()
            else:  # ranks that failed alike: once, with its traceback once
                hosts = len({g.host for g in group})
                on = f"{len(group)} ranks ({hosts} host{'s' if hosts > 1 else ''})"
                same = f.alike == self.root.alike
                lines.append(
                    f"--- [ranks {ranks_text([g.rank for g in group])}] also: "
                    + (f"the same on {on}" if same else f"{on} {f.what}")
                )
                details = [] if same else f.details()
            lines.extend(details)
            if details:
                lines.append("")
        if self.run_id:
            lines.append(f"(all output: %distributed logs {self.run_id})")
        return lines

    def _groups(self) -> list[list[RankFailure]]:
        """The root cause alone, then the other failures, those alike together (in the order
        of their first)."""
        groups: dict[tuple[Any, ...], list[RankFailure]] = {}
        for f in self.failures[1:]:
            groups.setdefault(f.alike, []).append(f)
        return [self.failures[:1], *groups.values()] if self.failures else []

    def __str__(self) -> str:
        return self.headline


def interrupted(message: str) -> KeyboardInterrupt:
    """The KeyboardInterrupt of a cell that the stop button interrupted on its ranks. It stays a
    plain KeyboardInterrupt (``ename`` in Jupyter), and IPython shows its one line instead of
    the kernel's own frames (formatting those took hundreds of milliseconds)."""
    exc = KeyboardInterrupt(message)
    exc._render_traceback_ = lambda: [f"KeyboardInterrupt: {message}"]  # type: ignore[attr-defined]
    return exc
