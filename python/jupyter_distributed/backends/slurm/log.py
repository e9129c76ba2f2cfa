"""Read what ``srun --label`` prints: per-task output (``3: text``) and its reports of tasks that
ended badly (``srun: error: node2: task 1: Exited with exit code 3`` / ``...: Killed``).

Each report becomes ``(rank, code)`` with a negative code for a signal, as
:class:`subprocess.Popen` reports it. Once one task failed, ``--kill-on-bad-exit`` makes srun
terminate the others: their ``Terminated`` reports are consequences, not causes, and are dropped.
"""

from __future__ import annotations

import re
import signal

from ...cluster.launcher import RankTails

_LABELED = re.compile(r"^\s*(\d+): (.*)$")
_TASK = re.compile(r"^srun: error: (\S+): tasks? ([\d,\-]+): (.+)$")
_EXIT = re.compile(r"Exited with exit code (\d+)")
_QUEUED = re.compile(r"^srun: job (\d+) queued and waiting for resources")
_ALLOCATED = re.compile(r"^srun: job (\d+) has been allocated resources")
_JOBID = re.compile(r"^srun: jobid (\d+): nodes")
_LAUNCH = re.compile(
    r"^srun: launching StepId=(\d+)\.(\S+) on host (\S+), \d+ tasks: \[?([\d,\-]+)\]?$"
)  # (tasks "0" alone, "[0-1]" for several)
_QUIET = re.compile(r"^srun: (?!.*(error|fatal|warning|Unable|unable|failed))")
_SIGNALS = {s.name.removeprefix("SIG").lower(): int(s) for s in signal.Signals}
_WORDS = {"killed": signal.SIGKILL, "terminated": signal.SIGTERM, "segmentation fault": 11}


def _ranks(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _code(reason: str) -> int | None:
    if m := _EXIT.search(reason):
        return int(m.group(1))
    word = reason.strip().lower().removesuffix(" (core dumped)")
    if word in _WORDS:
        return -int(_WORDS[word])
    if word in _SIGNALS:
        return -_SIGNALS[word]
    return None


class SrunLog(RankTails):
    """Fed line by line from srun's output (any thread); read from another."""

    def __init__(self, tail: int = 20) -> None:
        super().__init__(tail)
        self._failures: list[tuple[int, int, str]] = []
        self.job_id = ""
        self.step = ""  # JOB.STEP once srun launched the tasks
        self.hosts: dict[int, str] = {}  # rank -> node, from srun's launch report
        self.queued = False

    def feed(self, line: str) -> None:
        line = line.rstrip("\r\n")
        with self._lock:
            if m := _LABELED.match(line):
                self._keep(int(m.group(1)), m.group(2))
                return
            if not _QUIET.match(line):  # srun's -v chatter stays out of error messages
                self._keep(None, line)
            if m := _QUEUED.match(line):
                self.job_id, self.queued = m.group(1), True
            elif (m := _ALLOCATED.match(line)) or (m := _JOBID.match(line)):
                self.job_id, self.queued = m.group(1), False
            elif m := _LAUNCH.match(line):
                self.step = f"{m.group(1)}.{m.group(2)}"
                self.hosts.update(dict.fromkeys(_ranks(m.group(4)), m.group(3)))
            elif m := _TASK.match(line):
                code = _code(m.group(3))
                if code is None:
                    return
                for rank in _ranks(m.group(2)):
                    self._add(rank, code, m.group(1))

    def _add(self, rank: int, code: int, host: str) -> None:
        if any(r == rank for r, _, _ in self._failures):
            return
        if self._failures and code == -signal.SIGTERM:
            return  # srun ended it after the first failure (--kill-on-bad-exit)
        self._failures.append((rank, code, host))

    def failures(self) -> list[tuple[int, int, str]]:
        """(rank, code, host) of every task srun reported dead, first first."""
        with self._lock:
            return list(self._failures)
