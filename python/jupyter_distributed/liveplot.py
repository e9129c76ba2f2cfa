"""Throughput of a run as it happens, for the inline view: samples/s per rank over time.

Pure data, no widgets: :class:`Throughput` buckets ``report(samples=N)`` calls by second (memory
stays bounded however long a run lasts) and renders a plotly figure (as its JSON, so plotly
itself is not needed in the kernel) plus an SVG picture of the same lines for front-ends
without a plotly renderer.
"""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

MAX_BUCKETS = 600  # seconds of history kept (older ones are dropped)
MAX_RANK_LINES = 16  # above this many ranks only the total and the mean are drawn
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


class Throughput:
    def __init__(self, bucket: float = 1.0) -> None:
        self.bucket = bucket
        self.t0: float | None = None
        self._counts: dict[int, dict[int, float]] = defaultdict(dict)  # bucket -> rank -> n
        self.ranks: set[int] = set()

    def add(self, rank: int, t: float, samples: float) -> None:
        if self.t0 is None:
            self.t0 = t
        b = int((t - self.t0) // self.bucket)
        row = self._counts[b]
        row[rank] = row.get(rank, 0.0) + samples
        self.ranks.add(rank)
        if len(self._counts) > MAX_BUCKETS:
            del self._counts[min(self._counts)]

    def series(self) -> tuple[list[float], dict[str, list[float]]]:
        """x (seconds since the first sample) and y (samples/s) per line name."""
        if not self._counts:
            return [], {}
        keys = list(range(min(self._counts), max(self._counts) + 1))
        x = [k * self.bucket for k in keys]
        ranks = sorted(self.ranks)
        lines: dict[str, list[float]] = {}
        if len(ranks) <= MAX_RANK_LINES:
            for r in ranks:
                lines[f"rank {r}"] = [
                    self._counts.get(k, {}).get(r, 0.0) / self.bucket for k in keys
                ]
        totals = [sum(self._counts.get(k, {}).values()) / self.bucket for k in keys]
        lines["total"] = totals
        if len(ranks) > MAX_RANK_LINES:
            lines["mean per rank"] = [v / len(ranks) for v in totals]
        return x, lines

    def latest(self) -> float:
        """Total samples/s over the last complete second (0 before there is one)."""
        if len(self._counts) < 2:
            return 0.0
        return sum(self._counts[max(self._counts) - 1].values()) / self.bucket

    def figure(self, title: str = "samples/s") -> dict[str, Any]:
        """A plotly figure as JSON (``application/vnd.plotly.v1+json``)."""
        x, lines = self.series()
        data = [
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": x,
                "y": y,
                "line": {"width": 3 if name == "total" else 1.5},
            }
            for name, y in lines.items()
        ]
        return {
            "data": data,
            "layout": {
                "title": {"text": title},
                "height": 260,
                "margin": {"l": 50, "r": 10, "t": 30, "b": 35},
                "xaxis": {"title": {"text": "seconds"}},
                "yaxis": {"title": {"text": "samples/s"}},
            },
        }

    def svg(self, width: int = 480, height: int = 160) -> str:
        """The same lines as a small self-contained SVG (no script)."""
        x, lines = self.series()
        if not x:
            return "<em>no samples yet: call report(samples=N) in the cell</em>"
        top = max((max(y) for y in lines.values()), default=0.0) or 1.0
        span = (x[-1] - x[0]) or 1.0
        pad = 30

        def point(xv: float, yv: float) -> str:
            px = pad + (xv - x[0]) / span * (width - pad - 5)
            py = height - 15 - yv / top * (height - 25)
            return f"{px:.1f},{py:.1f}"

        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'role="img" aria-label="samples per second">',
            f'<text x="2" y="12" font-size="10">{top:.4g}/s</text>',
            f'<text x="2" y="{height - 3}" font-size="10">0</text>',
            f'<text x="{width - 40}" y="{height - 3}" font-size="10">{x[-1]:.0f}s</text>',
        ]
        for i, (name, y) in enumerate(lines.items()):
            color = "#000" if name == "total" else PALETTE[i % len(PALETTE)]
            pts = " ".join(point(a, b) for a, b in zip(x, y, strict=True))
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                f'points="{pts}"><title>{html.escape(name)}</title></polyline>'
            )
        parts.append("</svg>")
        return "".join(parts)
