"""A launcher process (``mpirun``, ``srun``) started in its own session, whose merged output is
kept in a log file and fed, as it comes, to the backend's parser of that launcher's reports
(which rank died, where the job waits). The log lives in this kernel's cluster directory: removed
when the cluster stops, swept by :mod:`~jupyter_distributed.history.reaper` if the kernel dies."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from ..errors import LaunchError
from ..history.reaper import leftover_prefix


class Launcher:
    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], feed: Callable[[str], None]
    ) -> None:
        name = Path(argv[0]).name
        self.directory = Path(tempfile.mkdtemp(prefix=leftover_prefix()))
        self.logfile = self.directory / f"{name}.log"
        self._feed = feed
        self.proc = subprocess.Popen(  # noqa: S603 (the launcher running our own worker command)
            tuple(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if self.proc.stdout is None:  # pragma: no cover - stdout=PIPE always gives a stream
            raise LaunchError(f"{name} started without an output pipe")
        self._reader = threading.Thread(
            target=self._read, args=(self.proc.stdout,), daemon=True, name=f"jd-{name}-log"
        )
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        with self.logfile.open("wb") as out, stream:
            for raw in stream:
                out.write(raw)
                out.flush()
                self._feed(raw.decode(errors="replace"))

    def read_to_end(self, timeout: float) -> None:
        """Wait (up to ``timeout``) until the launcher's last words are parsed."""
        self._reader.join(timeout)

    def remove(self) -> None:
        """The launcher has ended: remove its log and directory."""
        self._reader.join(2.0)
        shutil.rmtree(self.directory, ignore_errors=True)


class RankTails:
    """The last lines a launcher printed per rank (None: the launcher's own messages), fed from
    the reader thread, read from another; subclasses parse the launcher's reports under
    ``_lock``."""

    def __init__(self, tail: int = 20) -> None:
        self._lock = threading.Lock()
        self._tails: dict[int | None, deque[str]] = {}
        self._tail = tail
        self._recent: deque[str] = deque(maxlen=3)  # (the processes', whichever wrote them)

    def _keep(self, rank: int | None, line: str) -> None:
        if line.strip():
            self._tails.setdefault(rank, deque(maxlen=self._tail)).append(line.strip())
            if rank is not None:
                self._recent.append(line.strip())

    def tail(self, rank: int | None, lines: int = 1) -> str:
        """The last ``lines`` lines of a rank (None: the launcher's own messages)."""
        with self._lock:
            kept = list(self._tails.get(rank, ()))
        return " ".join(kept[-lines:])

    def last_words(self) -> str:
        """The last three lines its processes printed, whichever did; else the launcher's."""
        with self._lock:
            recent = " ".join(dict.fromkeys(self._recent))  # (lines alike: once)
        return recent or self.tail(None, lines=3)

    def start_failure(self, hops: Sequence[RankTails]) -> str:
        """Why the launch ended (a backend's ``log_tail(None)``): the launcher's last three
        lines, else the last words of its relays' and aggregators' launchers (``hops``: a
        relay that ended before it was ready says why there)."""
        return self.tail(None, lines=3) or " ".join(filter(None, (h.last_words() for h in hops)))
