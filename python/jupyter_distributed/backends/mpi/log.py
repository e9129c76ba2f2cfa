"""Read what ``mpirun`` prints: per-rank output (``--tag-output``) and its reports of dead ranks.

Open MPI reports the first rank that ended a job in one of three messages; each becomes
``(rank, code)`` with a negative code for a signal, as :class:`subprocess.Popen` reports it.
"""

from __future__ import annotations

import re

from ...cluster.launcher import RankTails

_TAGGED = re.compile(r"^\[\d+,(\d+)\]<(?:stdout|stderr)>:(.*)$")
_PROCESS_NAME = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]")
_EXIT_CODE = re.compile(r"Exit code:\s*(-?\d+)")
_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)")
_IMPROPER = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exiting improperly")
_RULE = re.compile(r"^-{10,}$")
#: Open MPI tags each piece a process writes: a line written in two pieces (Python's
#: ``sys.exit("why")`` writes the newline apart) ends with the tag of the second.
_TRAILING_TAG = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr)>:$")


class MpirunLog(RankTails):
    """Fed line by line from mpirun's output (any thread); read from another."""

    def __init__(self, tail: int = 20) -> None:
        super().__init__(tail)
        self._failures: list[tuple[int, int]] = []
        self._named: int | None = None  # rank of a "Process name:" line awaiting its exit code

    def feed(self, line: str) -> None:
        line = line.rstrip("\r\n")
        match = _TAGGED.match(line)
        with self._lock:
            if match:
                self._keep(int(match.group(1)), _TRAILING_TAG.sub("", match.group(2)))
                return
            self._keep(None, line)
            self._parse(line.strip())

    def _keep(self, rank: int | None, line: str) -> None:
        if not _RULE.match(line.strip()):  # Open MPI frames its reports with rules
            super()._keep(rank, line)

    def _parse(self, line: str) -> None:
        if m := _PROCESS_NAME.search(line):
            self._named = int(m.group(1))
        elif (m := _EXIT_CODE.search(line)) and self._named is not None:
            self._add(self._named, int(m.group(1)))
            self._named = None
        elif m := _SIGNAL.search(line):
            self._add(int(m.group(1)), -int(m.group(2)))
        elif m := _IMPROPER.search(line):
            self._add(int(m.group(1)), 0)

    def _add(self, rank: int, code: int) -> None:
        if all(r != rank for r, _ in self._failures):
            self._failures.append((rank, code))

    def failures(self) -> list[tuple[int, int]]:
        """(rank, code) of every rank mpirun reported dead, first first."""
        with self._lock:
            return list(self._failures)
