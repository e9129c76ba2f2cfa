"""The matplotlib backend of a rank (``MPLBACKEND=module://jupyter_distributed.worker.mplbackend``):
Agg drawing, no display server; ``plt.show()`` and the figures still open at the end of a cell
become ``image/png`` displays, as IPython's inline backend does."""

from __future__ import annotations

import base64
import io
from typing import Any

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import rich

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def figure_bundle(figure: Figure) -> tuple[dict[str, Any], dict[str, Any]]:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    data = buffer.getvalue()
    axes = len(figure.axes)
    text = f"<Figure size {figure.bbox.width:g}x{figure.bbox.height:g} with {axes} Axes>"
    return {"image/png": base64.b64encode(data).decode(), "text/plain": text}, {}


def flush_figures() -> None:
    """Show every open figure, then close them (a closed figure is not shown twice)."""
    managers = Gcf.get_all_fig_managers()
    try:
        for manager in managers:
            if rich.ACTIVE is not None:
                data, metadata = figure_bundle(manager.canvas.figure)
                rich.ACTIVE.publish(data, metadata)
    finally:
        if managers:
            Gcf.destroy_all()


def show(*args: Any, **kwargs: Any) -> None:
    flush_figures()


def draw_if_interactive() -> None:
    pass
