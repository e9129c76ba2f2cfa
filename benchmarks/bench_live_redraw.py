"""How a live line plot of the panel is cheapest to redraw when only its points changed:
`Plotly.react` (the panel today), `Plotly.restyle` of x/y only, or `Plotly.extendTraces`,
in an isolated page in headless Chromium (no JupyterLab, no stream: plotly alone).

The page holds the Throughput tab's 3 figures in the panel's layout (automargin, a legend
above the plot, unified hover, `uirevision`): samples/s at 256 ranks (the total, the
min–max band, the median, 2 stragglers: 6 traces) and two system plots (4 traces). Each
update adds one point to every trace and redraws one figure. An update's time is the main
thread's time in plotly for it: the call's synchronous part plus every animation-frame and
timer callback until its promise resolved and 30 ms more (``animate`` works in frames).
"passes": plotly's `plotly_afterplot` events over all updates (one per full plot pass).
One page per way and round, the ways in another order each round, to share the load.

    python benchmarks/bench_live_redraw.py [--rounds 3] [--updates 30] [--points 30]

Needs ``chromium`` on the PATH, ``npm ci`` (plotly.js' bundle in node_modules) and
ui-tests' node_modules (Playwright drives the page). Prints a
markdown table for ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAYWRIGHT = ROOT / "ui-tests" / "node_modules" / "playwright-core"
BUNDLE = ROOT / "node_modules" / "plotly.js-cartesian-dist-min" / "plotly-cartesian.min.js"

WAYS = {
    "react": "a new figure to `Plotly.react` (the panel today)",
    "restyle": "`Plotly.restyle` of x and y only",
    "extend": "`Plotly.extendTraces` of the new point",
    "react-fixed": "`Plotly.react`, x and y ranges given (no autorange)",
    "update-fixed": "`Plotly.update` of x and y, and of the x and y ranges (no autorange)",
    "animate-fixed": "`Plotly.animate` of x and y and the ranges, no redraw (no autorange)",
    "animate-nice": "as animate-fixed, the x range's end rounded up to 10 s (changes rarely)",
    "react-nice": "as react-fixed, the x range's end rounded up to 10 s (changes rarely)",
}

# The Throughput tab's figures at 256 ranks, as plotly traces: samples/s (the total, the min–max
# band, the median, 2 stragglers) and two system plots (4 ranks). `traces(f, n)`: figure f's, of
# n points. bench_first_draw.py draws them too.
TRACES_JS = """const COLORS = ['#444', '#444', '#444', '#444', '#e6194b', '#3cb44b'];
const NAMES = [['total', 'min rank', 'min – max rank', 'median rank', 'rank 17 (straggler)',
  'rank 200 (straggler)'], ['rank 0', 'rank 1', 'rank 2', 'rank 3'], ['rank 0', 'rank 1',
  'rank 2', 'rank 3']];
const config = {displaylogo: false, showTips: false, responsive: true, doubleClick: 'reset',
  modeBarButtonsToRemove: ['select2d', 'lasso2d', 'toImage']};
function value(f, i, k) { return (f + 1) * 100 * (1 + i) + 30 * Math.sin(k / 3 + i); }
function traces(f, n) {
  return NAMES[f].map((name, i) => {
    const x = [], y = [];
    for (let k = 0; k < n; k++) { x.push(k * 0.5); y.push(value(f, i, k)); }
    const t = {type: 'scatter', uid: 't' + i, name, x, y, mode: 'lines',
      line: {width: name.includes('straggler') ? 3 : 1.5, color: COLORS[i]},
      hovertemplate: '%{y:.4~g}'};
    if (f === 0 && i === 1) { t.showlegend = false; t.line.width = 0; }
    if (f === 0 && i === 2) {
      t.fill = 'tonexty'; t.fillcolor = 'rgba(68,68,68,0.18)'; t.line.width = 0;
    }
    if (f === 0 && i === 3) { t.line.dash = 'dot'; }
    return t;
  });
}
"""

PAGE = """<!doctype html><html><body style="width:560px">
<div id="f0"></div><div id="f1"></div><div id="f2"></div>
<script>
// plotly's work in later tasks (animation frames, timers) counts too: each callback is timed,
// wrapped before plotly.js loads (its d3 timers keep the functions they found).
let busy = 0;
const timed = fn => (...a) => { const t = performance.now(); try { return fn(...a); }
  finally { busy += performance.now() - t; } };
const [raf, timeout] = [window.requestAnimationFrame.bind(window), window.setTimeout.bind(window)];
window.requestAnimationFrame = fn => raf(timed(fn));
window.setTimeout = (fn, ms, ...a) => timeout(typeof fn === 'function' ? timed(fn) : fn, ms, ...a);
</script>
<script src="plotly.min.js"></script>
<script>
const WAY = '%(way)s', UPDATES = %(updates)d, POINTS = %(points)d;
%(traces)s
function layout(f, n, fixed) {
  const axis = {color: '#444', gridcolor: '#e5e5e5', zerolinecolor: '#e5e5e5', automargin: true};
  const l = {height: 220, margin: {l: 48, r: 12, t: 8, b: 36}, paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)', font: {color: '#444', size: 11}, hovermode: 'x unified',
    hoverdistance: -1, dragmode: 'zoom', showlegend: true,
    legend: {orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom', font: {color: '#444'}},
    xaxis: {...axis, title: {text: 'time (s)'}},
    yaxis: {...axis, rangemode: 'tozero', title: {text: 'samples/s'}}, uirevision: 'keep'};
  if (fixed) {
    const end = WAY.endsWith('-nice') ? Math.ceil((n - 1) * 0.05) * 10 : (n - 1) * 0.5;
    l.xaxis.range = [0, end]; l.xaxis.autorange = false;
    l.yaxis.range = [0, (f + 1) * 100 * (NAMES[f].length + 1)]; l.yaxis.autorange = false;
  }
  return l;
}
const sleep = ms => new Promise(r => timeout(r, ms));
(async () => {
  const divs = [0, 1, 2].map(f => document.getElementById('f' + f));
  const first = [], times = [];
  let passes = 0;
  for (let f = 0; f < 3; f++) {
    const t0 = performance.now();
    const l = layout(f, POINTS, /-(fixed|nice)$/.test(WAY));
    await Plotly.react(divs[f], traces(f, POINTS), l, config);
    first.push(performance.now() - t0);
    divs[f].on('plotly_afterplot', () => passes++);
    await sleep(50);
  }
  // The browser's own count of tasks over 50 ms while updating (its styles and layouts too).
  const long = [];
  new PerformanceObserver(l => l.getEntries().forEach(e => long.push(Math.round(e.duration))))
    .observe({type: 'longtask'});
  for (let u = 0; u < UPDATES; u++) {
    const n = POINTS + u + 1;
    for (let f = 0; f < 3; f++) {
      const div = divs[f];
      busy = 0;
      const t0 = performance.now();
      let call;
      if (WAY.startsWith('react')) {
        call = Plotly.react(div, traces(f, n), layout(f, n, WAY !== 'react'), config);
      } else if (WAY.startsWith('animate')) {
        const ts = traces(f, n), l = layout(f, n, true);
        const data = ts.map(t => ({x: t.x, y: t.y}));
        call = Plotly.animate(div, {data, traces: ts.map((_, i) => i),
          layout: {xaxis: {range: l.xaxis.range}, yaxis: {range: l.yaxis.range}}},
          {transition: {duration: 0}, frame: {duration: 0, redraw: false}, mode: 'immediate'});
      } else if (WAY === 'update-fixed') {
        const ts = traces(f, n), l = layout(f, n, true);
        call = Plotly.update(div, {x: ts.map(t => t.x), y: ts.map(t => t.y)},
          {'xaxis.range': l.xaxis.range, 'yaxis.range': l.yaxis.range}, ts.map((_, i) => i));
      } else if (WAY === 'restyle') {
        const ts = traces(f, n);
        call = Plotly.restyle(div, {x: ts.map(t => t.x), y: ts.map(t => t.y)}, ts.map((_, i) => i));
      } else {
        const idx = NAMES[f].map((_, i) => i);
        call = Plotly.extendTraces(div, {x: idx.map(() => [(n - 1) * 0.5]),
          y: idx.map(i => [value(f, i, n - 1)])}, idx);
      }
      busy += performance.now() - t0;
      await call;
      await sleep(30);
      times.push(busy);
    }
  }
  const shown = divs[0].querySelectorAll('.scatterlayer .trace').length;
  document.body.setAttribute('data-result', JSON.stringify({first, times, shown, passes, long,
    points: divs[0].data[0].x.length}));
})();
</script></body></html>"""


OPEN = """
const { chromium } = require(process.argv[1]);
(async () => {
  const browser = await chromium.launch({ executablePath: process.argv[2],
    args: ['--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage({ viewport: { width: 600, height: 900 } });
  await page.goto(process.argv[3]);
  await page.waitForSelector('body[data-result]', { timeout: 170000, state: 'attached' });
  console.log(await page.getAttribute('body', 'data-result'));
  await browser.close();
})();
"""


def open_page(html: str, name: str = "page.html") -> dict[str, object] | None:
    """Open `html` (next to a copy of plotly.js' bundle, as ``plotly.min.js``) in headless
    Chromium and return the JSON its body's ``data-result`` holds; None without Chromium or
    Playwright (ui-tests/node_modules)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    node = shutil.which("node")
    if browser is None or node is None or not BUNDLE.exists() or not PLAYWRIGHT.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(BUNDLE, Path(tmp) / "plotly.min.js")
        page = Path(tmp) / name
        page.write_text(html, encoding="utf-8")
        out = subprocess.run(  # noqa: S603 - our page, the browser on the PATH
            [node, "-e", OPEN, str(PLAYWRIGHT), browser, page.as_uri()],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        ).stdout.strip()
    if not out.startswith("{"):
        return None
    result: dict[str, object] = json.loads(out)
    return result


def run_page(way: str, updates: int, points: int) -> dict[str, object] | None:
    """One page's result: first draws and each update's ms; None without a browser."""
    return open_page(
        PAGE % {"way": way, "updates": updates, "points": points, "traces": TRACES_JS}, "live.html"
    )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--points", type=int, default=30)
    parser.add_argument("--way", choices=list(WAYS), action="append")
    args = parser.parse_args()
    ways = args.way or list(WAYS)
    load = os.getloadavg()[0]
    print(f"## Live redraw of a line plot ({os.cpu_count()} cores, load {load:.1f})\n")
    for way in ways:
        print(f"- {way}: {WAYS[way]}")
    print(
        "\nms of plotly's work per update; passes: full plot passes over all updates; long tasks:"
    )
    print("the browser's tasks over 50 ms while updating (ms).\n")
    columns = ["way", "round", "load", "first draws (ms)", "mean", "median", "p90", "max"]
    columns += ["updates > 50 ms", "passes", "long tasks"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in range(args.rounds):
        # Each round in another order: the first page of a round is not always the same way.
        for way in ways[r % len(ways) :] + ways[: r % len(ways)]:
            load = os.getloadavg()[0]
            result = run_page(way, args.updates, args.points)
            if result is None:
                print(f"| {way} | {r + 1} | {load:.1f} | no result (no browser) |||||||")
                continue
            times = [float(t) for t in result["times"]]  # type: ignore[attr-defined]
            first = ", ".join(f"{t:.0f}" for t in result["first"])  # type: ignore[attr-defined]
            print(
                f"| {way} | {r + 1} | {load:.1f} | {first} | {statistics.mean(times):.1f} | "
                f"{statistics.median(times):.1f} | {pct(times, 0.9):.1f} | {max(times):.1f} | "
                f"{sum(t > 50 for t in times)} | {result['passes']} | "
                f"{', '.join(map(str, result['long'])) or 'none'} |",  # type: ignore[call-overload]
                flush=True,
            )


if __name__ == "__main__":
    main()
