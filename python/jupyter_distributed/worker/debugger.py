"""pdb, ``input()`` and ``getpass()`` on a rank, answered from the notebook.

The rank's main thread sends a :class:`~..protocol.reports.Prompt` on its cell socket (after the
output written before it, which the kernel shows first) and waits on that socket for the
kernel's :class:`~..protocol.commands.Reply`: the kernel asks through its stdin channel
(``input_request``, JupyterLab's input box). ``breakpoint()`` and ``pdb.set_trace()`` open a
real :class:`pdb.Pdb` (:class:`RankPdb`) whose prompt names the rank and whose output is the
rank's, tagged ``[rank R]`` like any other line; ``%distributed debug`` opens one on the rank's
last exception, which the rank keeps until its next cell starts (as IPython's ``%debug``).
``pdb`` itself (and ``bdb``, ``cmd``, ``code``, ...) is imported only when a rank first needs it:
an idle rank without it starts and exits with about 1.7 MB less to build and free (0.7 ms of
CPU at its exit, hundreds of ranks at once): ``pdb.set_trace`` is redirected as ``pdb`` is
imported (:mod:`.pdbhook`), or at once where it already was.

Where the notebook answers no input (nbclient, ``--quiet``), all of them fail at once with the
one-line :data:`~.rich.NO_STDIN`; where the rank has no channel to the kernel (SageMaker), with
:data:`~..protocol.commands.NO_PROMPTS`.
"""

from __future__ import annotations

import builtins
import getpass
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.commands import NO_PROMPTS, Execute, Reply, Shutdown
from ..protocol.header import Message
from ..protocol.reports import Prompt, Resumed
from ..protocol.signing import Buffer
from .cellframe import CELL_FILE
from .pdbhook import redirect_set_trace
from .rich import NO_STDIN, NoStdin

if TYPE_CHECKING:
    from .rankpdb import RankPdb

Send = Callable[[Message], None]
Receive = Callable[[], tuple[Message, list[Buffer]]]


class Asker:
    """The rank's way to ask the notebook for a line (main thread only)."""

    def __init__(self, rank: int, send: Send, receive: Receive) -> None:
        self.rank, self._send, self._receive = rank, send, receive
        self.run_id = ""
        self.allowed = False  # the running cell's notebook answers input requests
        self.sync: Callable[[], None] = lambda: None  # hands on the output written so far
        self.shutdown = False  # the kernel said Shutdown while a prompt waited

    def check(self) -> None:
        if not self.allowed:
            raise NoStdin(NO_STDIN)
        if threading.current_thread() is not threading.main_thread():
            raise NoStdin("input() and pdb work on a rank's main thread only")

    def ask(self, text: str, password: bool = False, debugger: bool = False) -> str:
        """The notebook's answer to ``text``; KeyboardInterrupt for the stop button, EOFError
        when no answer will come."""
        self.check()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.sync()  # what was written before the prompt is shown before it
        self._send(Prompt(self.run_id, text, password, debugger))
        while True:
            message, _ = self._receive()
            if isinstance(message, Reply):
                if message.stop:
                    raise KeyboardInterrupt("stopped at the prompt")
                if message.eof:
                    raise EOFError
                return message.text
            if isinstance(message, Shutdown):
                self.shutdown = True
                raise KeyboardInterrupt("the cluster is stopping")

    def resumed(self) -> None:
        """This rank left pdb: another rank's prompt may be served."""
        if self.allowed:
            self._send(Resumed(self.run_id))


class Debugger:
    """What the runtime calls: install the hooks, start a cell, stop at its start, post-mortem."""

    def __init__(self, asker: Asker) -> None:
        self.asker = asker
        self.last: BaseException | None = None  # the last cell's exception, with its frames

    def install(self) -> None:
        """``breakpoint()``, ``pdb.set_trace()``, ``input()`` and ``getpass()`` ask the notebook."""
        sys.breakpointhook = self.breakpoint
        redirect_set_trace(self.set_trace)
        builtins.input = self.input
        getpass.getpass = self.getpass

    def begin(self, run_id: str, allowed: bool, sync: Callable[[], None], forget: bool) -> None:
        """A cell starts; ``forget``: it is not a post-mortem, so the last exception's frames
        (and their locals) are freed."""
        self.asker.run_id, self.asker.allowed, self.asker.sync = run_id, allowed, sync
        if forget:
            self.last = None

    def end(self) -> None:
        sys.settrace(None)  # (a cell left while stepping is traced no more)

    def breakpoint(self, *args: Any, **kwargs: Any) -> None:
        self.asker.check()
        _pdb(self.asker).set_trace(sys._getframe().f_back)

    def set_trace(self, *, header: str | None = None) -> None:
        self.asker.check()
        debugger = _pdb(self.asker)
        if header is not None:
            debugger.message(header)
        debugger.set_trace(sys._getframe().f_back)

    def input(self, prompt: object = "") -> str:
        return self.asker.ask(str(prompt))

    def getpass(self, prompt: str = "Password: ", stream: Any = None) -> str:
        return self.asker.ask(str(prompt), password=True)

    def stop_at_start(self, filename: str) -> None:
        """``--break``: pdb stops at the first line of the cell run from ``filename``."""
        self.asker.check()
        debugger = _pdb(self.asker)
        debugger.start_in = filename
        debugger.reset()
        sys.settrace(debugger.trace_dispatch)

    def post_mortem(self) -> None:
        """pdb on the last exception, in its frames (``%distributed debug``)."""
        exc = self.last
        if exc is None or exc.__traceback__ is None:
            rank = self.asker.rank
            sys.stdout.write(
                f"rank {rank} has no exception to debug (its last cell did not fail)\n"
            )
            return
        debugger = _pdb(self.asker)
        debugger.reset()
        debugger.interaction(None, _user_frames(exc.__traceback__))


def _pdb(asker: Asker) -> RankPdb:
    from .rankpdb import RankPdb  # (pdb is imported here, the first time a rank needs it)

    return RankPdb(asker)


def run_under(
    debugger: Debugger | None, command: Execute, rank: int, run: Callable[[str, str], Any]
) -> Any:
    """Run the command's cell (``run(code, filename)``) on ``rank``: with pdb at its first
    line for ``--break``, or pdb on the last exception instead (``%distributed debug``); a rank
    without a channel to the kernel has neither. Nothing is traced once the cell is left."""
    filename = f"{CELL_FILE}{command.run_id}>"
    wants = command.debug or command.break_rank == rank
    if wants and debugger is None:
        raise NoStdin(NO_PROMPTS)
    try:
        if debugger is not None and command.debug:
            debugger.post_mortem()
            return None
        if debugger is not None and wants:
            debugger.stop_at_start(filename)
        return run(command.code, filename)
    finally:
        if debugger is not None:
            debugger.end()


def _user_frames(tb: types.TracebackType) -> types.TracebackType:
    """The traceback from the cell's own frames on (not the runtime's that ran it)."""
    first = tb
    while first.tb_next is not None and str(first.tb_frame.f_globals.get("__name__")).startswith(
        "jupyter_distributed."
    ):
        first = first.tb_next
    return first
