"""What the ranks show under a cell as displays (see :mod:`.display`): each rank's *area*, its
displays and its live line, each a display with an id, emptied and filled again by the rank's
``clear_output``; the cluster's start-up line; and whether there is a shell to show rich
displays at all."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from .events import DisplayEvent


class Area:
    """The displays one rank shows under the cell, by id: ``lives`` its live lines, ``shown``
    its displays without an id of their own and ``named`` those with one (``display(...,
    display_id=)``); ``free`` displays that a clear emptied, which the rank's next displays
    fill first (each is under its label), and ``cleared`` the named ones it emptied, filled
    again when shown again."""

    __slots__ = ("cleared", "free", "lives", "named", "shown")

    def __init__(self) -> None:
        self.lives: list[str] = []
        self.shown: list[str] = []
        self.named: list[str] = []
        self.free: list[str] = []
        self.cleared: set[str] = set()


def rich() -> bool:
    """Whether an IPython shell is there to publish displays (else they are shown as text)."""
    from IPython.core.interactiveshell import InteractiveShell

    return bool(InteractiveShell.initialized())


def in_place() -> bool:
    """Whether displays are updated in place: a kernel's frontend (a notebook) does, a terminal
    IPython prints each update again."""
    from IPython.core.interactiveshell import InteractiveShell

    return rich() and getattr(InteractiveShell.instance(), "kernel", None) is not None


class Areas:
    """The displays of every rank of one cell. Text goes through the view: ``label`` writes a
    line at once (after the held ones), ``text`` writes a display as text where there is no
    shell, and ``before`` shows every pending line before a display is published."""

    def __init__(
        self,
        run_id: str,
        quiet: bool,
        progress: bool,
        display_ranks: Collection[int] | None,
        label: Callable[[str], None],
        before: Callable[[], None],
    ) -> None:
        self.run_id, self._quiet, self._progress = run_id, quiet, progress
        self.display_ranks = None if display_ranks is None else frozenset(display_ranks)
        self._label, self._before = label, before
        self.live_ids: dict[tuple[int, str], str] = {}  # (rank, stream) -> its display id
        self._lives = 0
        self.rich_results: set[int] = set()  # ranks whose result was a display
        self._areas: dict[int, Area] = {}  # rank -> the displays it shows
        self.waiting: set[int] = set()  # ranks whose clear_output(wait=True) is pending
        self._starting = False  # whether the cluster's start-up line is shown

    def ended_live(self, rank: int, stream: str, text: str) -> bool:
        """A rank's line that was redrawn in place came to its final state: shown in that
        place (emptied where the view is quiet); False where it had no live line."""
        live = self.live_ids.pop((rank, stream), None)
        if live is not None and not self._quiet:  # the line's final state
            self.publish(labelled(rank, text), {}, live, update=True)
        elif live and self._progress:  # (quiet: progress goes once it is over)
            self.publish({}, {}, live, update=True)
        return live is not None

    def live(self, rank: int, stream: str, text: str) -> None:
        """A rank's line redrawn in place: one display per rank and stream, updated."""
        self.clear_waiting(rank)
        if not rich():  # as text, only the final state is shown
            self.live_ids.setdefault((rank, stream), "")
            return
        display_id = self.live_ids.get((rank, stream))
        if display_id is None:
            self._lives += 1
            display_id = f"jd-{self.run_id}-{rank}-{stream}-{self._lives}"
            self.live_ids[rank, stream] = display_id
            self._area(rank).lives.append(display_id)
            self.publish(labelled(rank, text), {}, display_id, update=False)
        else:
            self.publish(labelled(rank, text), {}, display_id, update=True)

    def starting(self, text: str) -> None:
        """The cluster's start-up line, redrawn in place; emptied once ``text`` is empty (only
        a notebook shows it: as text, or in a terminal, it would print every stage again)."""
        if (self._quiet and not self._progress) or not in_place() or not (text or self._starting):
            return
        data = {"text/plain": f"[jupyter-distributed] {text}"} if text else {}
        metadata = {"jupyter_distributed": {"startup": True}}  # no rank's: the cluster's
        self.publish(data, metadata, f"jd-{self.run_id}-start", update=self._starting)
        self._starting = bool(text)

    def display(self, event: DisplayEvent) -> None:
        if self.display_ranks is not None and event.rank not in self.display_ranks:
            return
        metadata = {**event.metadata, "jupyter_distributed": {"rank": event.rank}}
        named = f"jd-{event.rank}-{event.display_id}" if event.display_id else None
        if event.update:
            self.publish(event.data, metadata, named, True)
            return
        area = self._area(event.rank)
        if named is not None:  # shown again after a clear: in its emptied place
            reused = named if named in area.cleared else None
            area.cleared.discard(named)
            area.named.append(named)
        else:
            reused = area.free.pop(0) if area.free and not event.result else None
        if reused is None:  # (a reused place keeps the label written above it)
            if event.result:
                self.rich_results.add(event.rank)
                self._label(f"Out[rank {event.rank}]:\n")
            elif not self._quiet:
                self._label(f"[rank {event.rank}] {event.mark}\n")
        display_id = named or reused
        if display_id is None:
            self._lives += 1
            display_id = f"jd-{self.run_id}-{event.rank}-d{self._lives}"
        if named is None:
            area.shown.append(display_id)
        self.publish(event.data, metadata, display_id, reused is not None)

    def clear(self, rank: int, wait: bool = False) -> None:
        """A rank's ``clear_output(wait)``: empty its displays and live line (see
        :mod:`.display`); with ``wait``, once the rank next shows something."""
        if wait:
            self.waiting.add(rank)
            return
        self.waiting.discard(rank)
        area = self._areas.get(rank)
        if area is None or not rich():
            return
        for key in [k for k in self.live_ids if k[0] == rank]:
            del self.live_ids[key]  # (a later redraw starts a new live line)
        for display_id in [*area.lives, *area.shown, *area.named]:
            self.publish({}, {}, display_id, update=True)
        area.free = [*area.shown, *area.free]
        area.cleared.update(area.named)
        area.lives, area.shown, area.named = [], [], []

    def clear_waiting(self, rank: int) -> None:
        if rank in self.waiting:
            self.clear(rank)

    def _area(self, rank: int) -> Area:
        area = self._areas.get(rank)
        if area is None:
            area = self._areas[rank] = Area()
        return area

    def publish(
        self, data: dict[str, Any], metadata: dict[str, Any], display_id: str | None, update: bool
    ) -> None:
        """Through IPython's display publisher under a kernel; as text elsewhere."""
        self._before()
        if not rich():
            self._label(f"{data.get('text/plain', '')}\n")
            return
        from IPython.display import publish_display_data

        transient = {"display_id": display_id} if display_id else None
        publish_display_data(data, metadata, transient=transient, update=update)  # type: ignore[no-untyped-call]


def labelled(rank: int, text: str) -> dict[str, Any]:
    return {"text/plain": f"[rank {rank}] {text}"}
