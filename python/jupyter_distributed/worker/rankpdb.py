"""The notebook's pdb on a rank (:mod:`.debugger` imports this only when a rank first needs
pdb: ``breakpoint()``, ``pdb.set_trace()``, ``--break``, ``%distributed debug``)."""

from __future__ import annotations

import pdb
import sys
import types
from typing import IO, Any, Protocol, cast

from .cellframe import cell_frame


class Asker(Protocol):
    """What pdb needs of the rank's :class:`~.debugger.Asker`."""

    rank: int

    def ask(self, text: str, password: bool = False, debugger: bool = False) -> str: ...

    def resumed(self) -> None: ...


class _Lines:
    """pdb's stdin: each line read is asked of the notebook with pdb's rank prompt."""

    def __init__(self, owner: RankPdb) -> None:
        self._owner = owner

    def readline(self, size: int | None = -1) -> str:
        try:
            return self._owner.asker.ask(self._owner.rank_prompt, debugger=True) + "\n"
        except EOFError:
            return ""  # pdb reads EOF: it quits


class RankPdb(pdb.Pdb):
    """A real pdb whose prompt is the notebook's input box. The stop button at the prompt
    leaves pdb with KeyboardInterrupt in the cell (pdb's own would catch it and prompt
    again); ``c`` and ``q`` say the rank resumed, so another rank's prompt is served."""

    def __init__(self, asker: Asker) -> None:
        self.asker = asker
        self.rank_prompt = f"(Pdb rank {asker.rank}) "
        self.start_in: str | None = None  # --break: stop first at this file's first line
        super().__init__(
            stdin=cast(IO[str], _Lines(self)),
            stdout=sys.stdout,
            skip=["jupyter_distributed.*"],
            nosigint=True,
        )
        self.prompt = ""  # (cmd writes it to stdout; the notebook shows rank_prompt instead)

    def _cmdloop(self) -> None:
        self.cmdloop()  # a KeyboardInterrupt leaves pdb (and, from a trace, tracing)

    def interaction(self, frame: types.FrameType | None, traceback: Any) -> None:
        try:
            super().interaction(frame, traceback)
        except BaseException:
            self.asker.resumed()
            raise
        continuing = self.stopframe is self.botframe and self.returnframe is None
        if frame is None or self.quitting or (continuing and self.stoplineno == -1):
            self.asker.resumed()

    def set_trace(self, frame: types.FrameType | None = None) -> None:
        super().set_trace(frame)
        self.botframe = cell_frame(frame) or self.botframe  # (w: from the cell up, as IPython)

    def stop_here(self, frame: types.FrameType) -> bool:
        if self.start_in is not None:
            return frame.f_code.co_filename == self.start_in
        return super().stop_here(frame)

    def user_call(self, frame: types.FrameType, argument_list: Any) -> None:
        if self.start_in is None:  # (--break stops at the first line, not the call)
            super().user_call(frame, argument_list)

    def user_line(self, frame: types.FrameType) -> None:
        if self.start_in is not None:
            self.start_in, self.botframe = None, frame
        super().user_line(frame)
