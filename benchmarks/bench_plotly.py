"""The panel's plotly.js: the size of the extension's chunks (plotly.js' lazy one apart from the
rest), and how long the 256-rank bandwidth heatmap takes to draw in headless Chromium.

Needs a production build (``npm run build:prod``) for the chunks, and ``chromium`` on the PATH
for the heatmap (skipped without it). Prints a markdown section for ``RESULTS.md``.

    python benchmarks/bench_plotly.py [--ranks 256] [--repeat 5] [--zsmooth false|fast]

``--zsmooth``: plotly's heatmap drawing, ``false`` a brick per cell (the panel's),
``fast`` one pixel per cell scaled as an image (tried: no measurable gain on the first draw);
both are timed when it is not given. ``--cold``: no warm-up plot first (the panel warms
plotly.js up when its chunk loads).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "python" / "jupyter_distributed" / "labextension" / "static"
BUNDLE = ROOT / "node_modules" / "plotly.js-cartesian-dist-min" / "plotly-cartesian.min.js"

PAGE = """<!doctype html><html><body><div id="g" style="width:600px;height:600px"></div>
<script src="plotly.min.js"></script>
<script>
const n = %(n)d, z = [];
for (let i = 0; i < n; i++) {
  const row = [];
  for (let j = 0; j < n; j++) row.push(i === j ? null : 1 + ((i * 7 + j * 13) %% 50) / 10);
  z.push(row);
}
const times = [];
async function once() {
  const div = document.getElementById('g');
  Plotly.purge(div);
  const t0 = performance.now();
  await Plotly.newPlot(div, [{type: 'heatmap', z, colorscale: 'Viridis', hoverongaps: false,
    zsmooth: %(zsmooth)s,
    hovertemplate: '%%{y}↔%%{x}: %%{z:.3f} GB/s<extra></extra>'}],
    {width: 600, height: 600, yaxis: {autorange: 'reversed'}});
  times.push(Math.round(performance.now() - t0));
}
(async () => {
  if (%(warm)s) {
    // The panel's first warm-up: a one-point plot off screen, so that plotly's one-time set-up
    // (style sheet, font measurements) is not the first figure's. The panel now warms up with
    // a line plot and a small heatmap, and draws a figure's frame first: bench_first_draw.py.
    const w = document.createElement('div');
    w.style.cssText = 'position:absolute;left:-10000px;width:200px;height:100px';
    document.body.appendChild(w);
    const t0 = performance.now();
    await Plotly.newPlot(w, [{type: 'scatter', x: [0], y: [0]}], {width: 200, height: 100});
    Plotly.purge(w);
    w.remove();
    document.body.setAttribute('data-warm', String(Math.round(performance.now() - t0)));
  }
  for (let k = 0; k < %(repeat)d; k++) await once();
  document.body.setAttribute('data-times', JSON.stringify(times));
})();
</script></body></html>"""


def chunks() -> list[tuple[str, int, int, bool]]:
    """Each built chunk: its name, bytes, gzipped bytes, and whether it holds plotly.js."""
    out = []
    for path in sorted(STATIC.glob("*.js")):
        data = path.read_bytes()
        out.append((path.name, len(data), len(gzip.compress(data, 9)), b"js-plotly-plot" in data))
    return out


def heatmap_times(
    n: int, repeat: int, zsmooth: str = "fast", warm: bool = True
) -> tuple[int | None, list[int]] | None:
    """Milliseconds of plotly's warm-up (None: not warmed) and of each `Plotly.newPlot` of an
    n × n heatmap; None without Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None or not BUNDLE.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(BUNDLE, Path(tmp) / "plotly.min.js")
        page = Path(tmp) / "heat.html"
        page.write_text(
            PAGE
            % {
                "n": n,
                "repeat": repeat,
                "zsmooth": "false" if zsmooth == "false" else f"'{zsmooth}'",
                "warm": "true" if warm else "false",
            },
            encoding="utf-8",
        )
        flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--timeout=20000"]
        dom = subprocess.run(  # noqa: S603 - our page, the browser on the PATH
            [browser, *flags, "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        ).stdout
    found = re.search(r'data-times="([^"]*)"', dom)
    warmed = re.search(r'data-warm="(\d+)"', dom)
    if not found:
        return None
    return (int(warmed.group(1)) if warmed else None), json.loads(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--zsmooth", choices=["false", "fast"], action="append")
    parser.add_argument("--cold", action="store_true", help="no warm-up plot before the heatmap")
    args = parser.parse_args()
    print(f"## plotly.js in the panel ({platform.processor() or platform.machine()}, ", end="")
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})\n")
    print("| chunk | bytes | gzip | holds plotly.js |\n|---|---|---|---|")
    for name, size, packed, plotly in chunks():
        print(f"| {name} | {size:,} | {packed:,} | {'yes (lazy)' if plotly else 'no'} |")
    for zsmooth in args.zsmooth or ["false", "fast"]:
        measured = heatmap_times(args.ranks, args.repeat, zsmooth, not args.cold)
        if measured is None:
            print("\nheatmap: no chromium (or no node_modules), not measured")
            break
        warm, times = measured
        print(
            f"\n{args.ranks}-rank heatmap, zsmooth={zsmooth}, warm-up "
            f"{'none' if warm is None else f'{warm} ms'}, Plotly.newPlot to its promise: {times} ms"
        )


if __name__ == "__main__":
    main()
