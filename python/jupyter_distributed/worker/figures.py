"""A matplotlib figure as a notebook shows it: one entry per format the kernel's
``InlineBackend`` settings name (:class:`~..protocol.figures.FigureConfig`), and its text form.

Apart from :mod:`.mplbackend` so that :mod:`.rich` (a figure as a cell's last value) and the
backend (``plt.show()``, figures open at the end of a cell) share it without importing each
other. matplotlib is never imported here: a figure exists only once the cell imported it.
"""

from __future__ import annotations

import base64
import io
import struct
from typing import TYPE_CHECKING, Any

from ..protocol.figures import MIME, FigureConfig

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def figure_bundle(
    figure: Figure, figures: FigureConfig, only: str = ""
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figure as a display: one entry per format of ``figures`` (``only``: those of that
    MIME type), and its text form."""
    formats = list(figures.formats)
    if "retina" in formats or "png2x" in formats:  # as IPython: retina replaces png
        formats = [f for f in formats if f not in ("png", "png2x")] + ["retina"]
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for name in dict.fromkeys(formats):
        mime = MIME[name]
        if only and mime != only:
            continue
        raw = _print(figure, "png" if name == "retina" else name, figures.print_kwargs, name)
        if mime == "image/svg+xml":
            data[mime] = raw.decode("utf-8")
            continue
        data[mime] = base64.b64encode(raw).decode()
        if name == "retina" and raw[:8] == b"\x89PNG\r\n\x1a\n":
            width, height = struct.unpack(">II", raw[16:24])
            metadata[mime] = {"width": width // 2, "height": height // 2}
    axes = len(figure.axes)
    text = f"<Figure size {figure.bbox.width:g}x{figure.bbox.height:g} with {axes} Axes>"
    data["text/plain"] = text
    return data, metadata


def _print(figure: Figure, fmt: str, kwargs: dict[str, Any], name: str) -> bytes:
    """As IPython's ``print_figure``: the figure's colours, its dpi (twice for retina)."""
    options: dict[str, Any] = {
        "format": "jpeg" if fmt == "jpg" else fmt,
        "facecolor": figure.get_facecolor(),
        "edgecolor": figure.get_edgecolor(),
        "dpi": figure.dpi * (2 if name in ("retina", "png2x") else 1),
        "bbox_inches": "tight",
        **kwargs,
    }
    buffer = io.BytesIO()
    figure.savefig(buffer, **options)
    return buffer.getvalue()
