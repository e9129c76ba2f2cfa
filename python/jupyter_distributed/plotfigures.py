"""plotly figures in the notebook: ``%distributed compare`` and ``%distributed probe`` show them
above their text tables, as ``application/vnd.plotly.v1+json`` displays with a text/plain
fallback, so the notebook has the panel's interactive figures (hover, zoom, legend, PNG).

The figures are plain dicts in plotly's figure schema (``data`` and ``layout``), so building
and showing one needs no import of plotly; the tests check them with plotly's own validation
when plotly is installed. A heatmap is one z-matrix with one hover template and no per-cell
text, so 256 ranks draw in well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from IPython.display import display

from .scaling import RunRate

PLOTLY_MIME = "application/vnd.plotly.v1+json"

_LAYOUT: dict[str, Any] = {"height": 340, "margin": {"l": 56, "r": 16, "t": 48, "b": 48}}


def compare_figure(rates: Sequence[RunRate]) -> dict[str, Any] | None:
    """samples/s (the total) against world size, measured and ideal linear scaling from the
    smallest run that reported samples (``%distributed compare``'s table); None when no run
    reported samples."""
    measured = [r for r in rates if r.throughput > 0]
    if not measured:
        return None
    base = measured[0]
    per_rank = base.throughput / base.run.world_size
    x = [r.run.world_size for r in measured]
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "measured",
            "x": x,
            "y": [round(r.throughput, 3) for r in measured],
            "customdata": [r.run.id for r in measured],
            "hovertemplate": "%{customdata}: %{y:.1f} samples/s",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "ideal (linear)",
            "x": x,
            "y": [round(n * per_rank, 3) for n in x],
            "line": {"dash": "dot"},
            "hovertemplate": "%{y:.1f} samples/s",
        },
    ]
    layout = {
        **_LAYOUT,
        "title": {"text": "samples/s (total, one rank per data-parallel replica) by world size"},
        "xaxis": {"title": {"text": "ranks"}, "tickformat": "d"},
        "yaxis": {"title": {"text": "samples/s"}, "rangemode": "tozero"},
        "hovermode": "x unified",
    }
    return {"data": data, "layout": layout}


def probe_figures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A probe's figures: the pair bandwidth heatmap (GB/s, row ↔ column), and the
    all_reduce bus bandwidth against message size when it was measured."""
    n = int(result["world_size"])
    z: list[list[float | None]] = [[None] * n for _ in range(n)]
    for p in result["pairs"]:
        a, b = int(p["a"]), int(p["b"])
        if 0 <= a < n and 0 <= b < n:
            z[a][b] = z[b][a] = round(float(p["bandwidth_gbs"]), 4)
    heatmap: dict[str, Any] = {
        "data": [
            {
                "type": "heatmap",
                "z": z,
                "colorscale": "Viridis",
                "hoverongaps": False,
                "hovertemplate": "%{y}↔%{x}: %{z:.3f} GB/s<extra></extra>",
                "colorbar": {"title": {"text": "GB/s"}},
            }
        ],
        "layout": {
            **_LAYOUT,
            "title": {"text": f"pair bandwidth (GB/s), {n} ranks"},
            "xaxis": {"title": {"text": "rank"}, "scaleanchor": "y"},
            "yaxis": {"title": {"text": "rank"}, "autorange": "reversed"},
        },
    }
    figures = [heatmap]
    curve = result.get("allreduce") or []
    if curve:
        figures.append(
            {
                "data": [
                    {
                        "type": "scatter",
                        "mode": "lines+markers",
                        "name": "all_reduce",
                        "x": [p["bytes"] for p in curve],
                        "y": [p["busbw_gbs"] for p in curve],
                        "hovertemplate": "%{x:.3s}B: %{y:.3f} GB/s",
                    }
                ],
                "layout": {
                    **_LAYOUT,
                    "title": {"text": "all_reduce bus bandwidth (GB/s)"},
                    "xaxis": {"title": {"text": "bytes"}, "type": "log"},
                    "yaxis": {"title": {"text": "GB/s"}, "rangemode": "tozero"},
                    "hovermode": "x unified",
                },
            }
        )
    return figures


def bundle(figure: dict[str, Any]) -> dict[str, Any]:
    """The display bundle of ``figure``: plotly's MIME type, and its title as plain text."""
    title = figure.get("layout", {}).get("title", {}).get("text", "figure")
    return {PLOTLY_MIME: figure, "text/plain": f"<plotly figure: {title}>"}


def show(figure: dict[str, Any] | None) -> None:
    """Display ``figure`` in the running notebook (nothing for None)."""
    if figure is not None:
        display(bundle(figure), raw=True)  # type: ignore[no-untyped-call]
