"""The inline widget's run names its backend and cell, for the widget's title
("local · 2 ranks · <first line of the cell>", drawn by ``inline.tsx``)."""

from __future__ import annotations

from jupyter_distributed.events import RankEvent, RankState
from jupyter_distributed.magics import _view
from jupyter_distributed.spec import Spec
from jupyter_distributed.widgets import WidgetView


def test_the_widget_run_has_the_backend_and_the_cell() -> None:
    view = _view(Spec(), quiet=False, widget=True, cell="x = train()\nprint(x)\n")
    assert isinstance(view, WidgetView)
    view.on_event(RankEvent("r1", 0, 1.0, RankState.RUNNING))
    view.sync(force=True)
    run = view.widget.run
    assert run is not None
    assert (run["backend"], run["source"]) == ("local", "x = train()\nprint(x)\n")
    assert run["world_size"] == len(Spec().ranks)
