"""The ranks' prompts of one run (``input()``, ``getpass()``, pdb), served on the kernel's main
thread through the notebook's stdin channel.

A rank's :class:`~..protocol.reports.Prompt` reaches the main thread's wait loop as an inbox
item (:class:`~.inbox.Prompted`), after the output the rank wrote before it. The kernel asks
with its own ``input()`` / ``getpass()`` (ipykernel's while a cell runs: an ``input_request``
that JupyterLab shows as an input box) and sends the answer to that rank alone
(:class:`~..protocol.commands.Reply`). A rank in pdb is served until it leaves pdb (``c``,
``q``; :class:`~.inbox.LeftDebugger`) or its cell ends: another rank's prompts wait, then are
served in the order they came. The stop button at a prompt answers that rank ``stop`` (it
leaves pdb with KeyboardInterrupt in its cell, keeping its variables) and is then the stop
button for the run. Time spent at a prompt is not counted by ``--timeout`` (:attr:`paused`).
"""

from __future__ import annotations

import builtins
import getpass
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from ..protocol.commands import Reply
from ..protocol.header import Message
from ..protocol.signing import Buffer
from .inbox import LeftDebugger, Prompted

log = logging.getLogger("jupyter_distributed")
Ask = Callable[[str, bool], str]  # (prompt, password) -> the line typed


def kernel_ask(prompt: str, password: bool) -> str:
    """The kernel's own ``input()`` or ``getpass()``, as they are while the cell runs
    (ipykernel forwards them to the notebook)."""
    return getpass.getpass(prompt) if password else builtins.input(prompt)


class Sender(Protocol):
    def send(
        self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()
    ) -> None: ...


class Prompts:
    def __init__(self, cluster: Sender, run_id: str, ask: Ask = kernel_ask) -> None:
        self.cluster, self.run_id, self.ask = cluster, run_id, ask
        self.serving: int | None = None  # the rank in pdb now
        self.waiting: deque[Prompted] = deque()
        self.paused = 0.0  # seconds the notebook spent answering
        self.stopping = False  # the run is being stopped: prompts are answered ``stop``

    def take(self, item: Prompted | LeftDebugger, flush: Callable[[], None]) -> None:
        """A rank's prompt (served now, or once the rank in pdb left it) or its leaving pdb;
        ``flush`` shows what the view holds before the notebook asks."""
        if isinstance(item, LeftDebugger):
            self.left(item.rank, flush)
        elif item.prompt.run_id != self.run_id:
            return  # (a prompt of an earlier cell: that cell is over)
        elif self.serving not in (None, item.rank) and not self.stopping:
            self.waiting.append(item)
        else:
            self._serve(item, flush)

    def left(self, rank: int, flush: Callable[[], None]) -> None:
        """``rank`` left pdb (or its cell ended): serve the prompts that waited."""
        if self.serving != rank:
            return
        self.serving = None
        while self.waiting and self.serving is None:
            self._serve(self.waiting.popleft(), flush)

    def stop(self) -> None:
        """The run is being stopped: the ranks that wait are told so, and later prompts too."""
        self.stopping = True
        waiting, self.waiting = self.waiting, deque()
        for item in waiting:
            self._reply(item.rank, Reply(self.run_id, stop=True))

    def _serve(self, item: Prompted, flush: Callable[[], None]) -> None:
        if self.stopping:
            self._reply(item.rank, Reply(self.run_id, stop=True))
            return
        prompt = item.prompt
        if prompt.debugger:
            self.serving = item.rank
        text = prompt.text if prompt.debugger else f"[rank {item.rank}] {prompt.text}"
        flush()
        start = time.monotonic()
        try:
            line = self.ask(text, prompt.password)
        except KeyboardInterrupt:  # the stop button at the prompt
            self._reply(item.rank, Reply(self.run_id, stop=True))
            raise
        except EOFError:
            self._reply(item.rank, Reply(self.run_id, eof=True))
            return
        except Exception as exc:  # noqa: BLE001 (the notebook answers no input after all)
            log.warning("jupyter-distributed: rank %s's prompt got no answer: %s", item.rank, exc)
            self._reply(item.rank, Reply(self.run_id, eof=True))
            return
        finally:
            self.paused += time.monotonic() - start
        self._reply(item.rank, Reply(self.run_id, line))

    def _reply(self, rank: int, reply: Reply) -> None:
        self.cluster.send([rank], reply)
