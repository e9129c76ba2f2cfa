"""The server keeps following detached runs (SageMaker jobs) whose kernel is gone.

A run started with ``--no-wait`` (or whose kernel exited or was restarted mid-run) has nobody
recording its logs, metrics and end. The :class:`Follower` thread looks for such runs in the store
(backend ``sagemaker``, not finished, started on this host by a kernel that no longer exists),
takes the run's follow lease and follows the job with the same code as ``%distributed attach``,
so the panel shows it like any other run. Everything here runs in threads, never on the server's
event loop. A kernel and the server never both follow one job: both hold the lease while
following (``Store.claim_follow``), renewed at every poll.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..backends import followable, follower
from ..backends.hooks import CommandContext
from ..errors import CloudError, DistributedError
from ..events import Event
from ..history.store import RunRecord, Store, pid_alive
from ..recorder import recording

#: How often the store is scanned for runs nobody follows, in seconds.
SCAN_INTERVAL = 2.0

log = logging.getLogger(__name__)


class Stopping(Exception):
    """Raised inside a follow when the server shuts down; the job itself keeps running."""


class _Quiet:
    """The RunView of a follow with nobody watching: everything goes to the store only."""

    def on_event(self, event: Event) -> None:
        pass

    def live(self, rank: int, stream: str, text: str) -> None:
        pass

    def queued(self, reason: str) -> None:
        pass

    def starting(self, text: str) -> None:
        pass

    def notice(self, text: str) -> None:
        log.debug("jupyter_distributed follower: %s", text)

    def flush(self) -> None:
        pass

    def finish(self, unrecorded: int = 0) -> None:
        pass


def orphaned(run: RunRecord, host: str) -> bool:
    """A run of a backend that can follow detached runs (the registry says which), not ended,
    whose kernel (on this host) is gone.

    Runs started on another host are left to that host's server: their kernel cannot be seen."""
    return (
        run.backend in followable()
        and bool(run.external_id)
        and not run.state.finished
        and run.host == host
        and not pid_alive(run.kernel_pid)
    )


class Follower:
    """Scans the store every ``interval`` seconds and follows each orphaned run in a thread."""

    def __init__(
        self,
        store_path: Path,
        interval: float = SCAN_INTERVAL,
        clients: Callable[[], Any] | None = None,
        poll: float = 0.5,
        defaults: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.store_path, self.interval, self.poll = store_path, interval, poll
        self._clients = clients
        # Per backend, the option defaults the server's configuration gives (c.DistributedX.*).
        self._defaults = dict(defaults or {})
        self._stop = threading.Event()
        self._following: dict[str, threading.Thread] = {}
        self._gave_up: set[str] = set()  # runs that cannot be followed (e.g. the job is gone)
        self._thread = threading.Thread(target=self._scan_loop, name="jd-follower", daemon=True)
        self.host = socket.gethostname()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop following (the jobs keep running) and release the leases; blocks: call it
        from a thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        for thread in list(self._following.values()):
            thread.join(timeout)

    @property
    def following(self) -> list[str]:
        return [run_id for run_id, t in self._following.items() if t.is_alive()]

    def _sleep(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise Stopping

    def _scan_loop(self) -> None:
        store = Store.open(self.store_path)  # the server's own
        try:
            while not self._stop.is_set():
                store.reap()  # runs of kernels that died on this host end "failed"
                self.scan(store)
                self._stop.wait(self.interval)
        finally:
            store.close()

    def scan(self, store: Store) -> None:
        for run in store.runs(limit=200):
            if run.id in self.following or run.id in self._gave_up or not orphaned(run, self.host):
                continue
            if store.claim_follow(run.id, self.host, os.getpid()) is not None:
                continue  # a live follower (another server, an attached kernel) has it
            thread = threading.Thread(
                target=self._follow, args=(run,), name=f"jd-follow-{run.id}", daemon=True
            )
            self._following[run.id] = thread
            thread.start()

    def _follow(self, run: RunRecord) -> None:
        store = Store.open(self.store_path)  # the server's own
        try:
            follow = follower(run.backend)
            if follow is None:  # pragma: no cover - orphaned() only picks followable backends
                return
            log.info("jupyter_distributed: following %s (run %s)", run.external_id, run.id)
            defaults = self._defaults.get(run.backend, {})
            context = CommandContext(store, recording(store, _Quiet), {}, defaults)
            follow(context, run, self._sleep, self.poll, self._clients)
        except Stopping:
            pass  # shutting down: the job keeps running, the next server follows it again
        except CloudError as exc:  # AWS failed (throttling, credentials): try again later
            log.warning("jupyter_distributed: following run %s: %s", run.id, exc)
        except DistributedError as exc:
            self._gave_up.add(run.id)
            log.warning("jupyter_distributed: cannot follow run %s: %s", run.id, exc)
        except Exception:  # a thread boundary: log whatever AWS or SQLite raised, keep serving
            log.exception("jupyter_distributed: following run %s failed", run.id)
        finally:
            store.release_follow(run.id, self.host, os.getpid())
            store.close()
