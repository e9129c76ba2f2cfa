"""A panel figure's first draw, in one task or in two (its frame, then the figure), in an
isolated page in headless Chromium (plotly alone: no JupyterLab, no stream).

What a page does, as the panel does when the Throughput tab and then the Scaling tab are
first shown: plotly.js' warm-up once it is loaded, then the Throughput tab's 3 figures in the
panel's layout (automargin, a legend above the plot, unified hover, axis titles): samples/s
at 256 ranks (the total, the min–max band, the median, 2 stragglers: 6 traces of 30 points)
and two system plots (4 traces), then the 256-rank bandwidth heatmap (65,536 cells, one
z-matrix, a colour bar). Each step is a task of its own; a task's time is its synchronous
part and plotly's promise (microtasks). Ways:

- ``before``: the panel before this pass: a one-point warm-up; each figure one `Plotly.react`.
- ``warm``: the panel's warm-up now (a line plot with a band and a legend, then a small
  heatmap, each in a task of its own); each figure one `Plotly.react`.
- ``empty-frame`` (tried, not kept): that warm-up, then a frame of the layout without data,
  legend or automargin, then the figure in the next task.
- ``three`` (tried, not kept): that empty frame, then the `after` frame, then the figure.
- ``after``: the panel now: that warm-up, then each figure's frame (`frameOf` of
  firstdraw.ts: the figure with every trace ``legendonly``: its DOM, axes, legend and
  margins, no trace drawn), then the figure in the next task.

One page per way and round, the ways in another order each round, to share the load.

    python benchmarks/bench_first_draw.py [--rounds 3] [--ranks 256]

Needs ``chromium`` on the PATH, ``npm ci`` (plotly.js' bundle in node_modules) and
ui-tests' node_modules (Playwright drives the page). Prints a markdown table for RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics

from bench_live_redraw import TRACES_JS, open_page

WAYS = ("before", "warm", "empty-frame", "three", "after")

PAGE = """<!doctype html><html><body style="width:560px"><div id="figs"></div>
<script src="plotly.min.js"></script>
<script>
const WAY = '%(way)s', N = %(ranks)d, POINTS = 30;
%(traces)s
// lineLayout() of figures.ts, and the heatmap view's layout.
function layout(title) {
  const axis = {color: '#444', gridcolor: '#e5e5e5', zerolinecolor: '#e5e5e5', automargin: true};
  return {height: 240, margin: {l: 48, r: 12, t: 8, b: 36}, paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)', font: {color: '#444', size: 11}, hovermode: 'x unified',
    hoverdistance: -1, dragmode: 'zoom', showlegend: true,
    legend: {orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom', font: {color: '#444'}},
    xaxis: {...axis, title: {text: 's since start'}, range: [0, 30], autorange: false},
    yaxis: {...axis, rangemode: 'tozero', title: {text: title}}, uirevision: 'keep'};
}
const Z = [];
for (let i = 0; i < N; i++) {
  const row = [];
  for (let j = 0; j < N; j++) row.push(i === j ? null : 1 + ((i * 7 + j * 13) %% 50) / 10);
  Z.push(row);
}
function heatmap(z) {
  return [{type: 'heatmap', z, colorscale: 'Viridis', hoverongaps: false,
    hovertemplate: '%%{y}↔%%{x}: %%{z:.3f} GB/s<extra></extra>',
    colorbar: {title: {text: 'GB/s'}, thickness: 12}}];
}
const axis = {automargin: true, showgrid: false, zeroline: false, color: '#444',
  title: {text: 'rank'}};
const heatLayout = {height: 320, margin: {l: 48, r: 12, t: 8, b: 36},
  paper_bgcolor: 'rgba(0,0,0,0)', plot_bgcolor: 'rgba(0,0,0,0)', font: {color: '#444', size: 11},
  xaxis: axis, yaxis: {...axis, autorange: 'reversed'}, uirevision: 'keep'};
// The empty frame (tried): the layout without legend or automargin.
function emptyFrame(l) {
  const f = {...l, showlegend: false};
  for (const k of Object.keys(l)) if (/^[xy]axis\\d*$/.test(k)) f[k] = {...l[k], automargin: false};
  return f;
}
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function task(fn) {
  await sleep(0);
  const t0 = performance.now();
  await fn();
  return Math.round(performance.now() - t0);
}
async function draw(div, data, l) {
  // frameOf() of firstdraw.ts.
  const frame = data.map(t => ({...t, visible: 'legendonly'}));
  if (WAY === 'three') {
    return [await task(() => Plotly.react(div, [], emptyFrame(l), config)),
      await task(() => Plotly.react(div, frame, l, config)),
      await task(() => Plotly.react(div, data, l, config))];
  }
  if (WAY === 'after') {
    return [await task(() => Plotly.react(div, frame, l, config)),
      await task(() => Plotly.react(div, data, l, config))];
  }
  if (WAY === 'empty-frame') {
    return [await task(() => Plotly.react(div, [], emptyFrame(l), config)),
      await task(() => Plotly.react(div, data, l, config))];
  }
  return [await task(() => Plotly.react(div, data, l, config))];
}
(async () => {
  const w = document.createElement('div');
  w.style.cssText = 'position:absolute;left:-10000px;top:0;width:560px';
  document.body.appendChild(w);
  const warm = [];
  if (WAY === 'before') {
    warm.push(await task(() => Plotly.react(w, [{type: 'scatter', x: [0], y: [0]}],
      {width: 200, height: 100}, {staticPlot: true})));
  } else {
    const small = traces(0, 3);
    warm.push(await task(() => Plotly.react(w, small, layout('n'), config)));
    Plotly.purge(w);
    warm.push(await task(() => Plotly.react(w, heatmap([[null, 1], [2, null]]),
      {...layout('n'), showlegend: false}, config)));
  }
  Plotly.purge(w);
  w.remove();
  await sleep(200);
  const long = [];
  new PerformanceObserver(l => l.getEntries().forEach(e => long.push(Math.round(e.duration))))
    .observe({type: 'longtask'});
  const figs = document.getElementById('figs');
  const lines = [];
  for (let f = 0; f < 3; f++) {
    const div = document.createElement('div');
    figs.appendChild(div);
    lines.push(await draw(div, traces(f, POINTS), layout(['samples/s', '%%', 'MiB'][f])));
  }
  await sleep(100);
  figs.innerHTML = '';
  const div = document.createElement('div');
  figs.appendChild(div);
  const heat = await draw(div, heatmap(Z), heatLayout);
  await sleep(100);
  document.body.setAttribute('data-result', JSON.stringify({warm, lines, heat, long}));
})();
</script></body></html>"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--way", choices=WAYS, action="append")
    args = parser.parse_args()
    ways = list(args.way or WAYS)
    print(f"## A figure's first draw ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})\n")
    print("Each task's ms; a figure drawn in two tasks is `frame+figure`.\n")
    columns = ["way", "round", "load", "warm-up", "line figures", "longest line task"]
    columns += [f"{args.ranks}-rank heatmap", "long tasks after the warm-up"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    longest: dict[str, list[int]] = {way: [] for way in ways}
    for r in range(args.rounds):
        for way in ways[r % len(ways) :] + ways[: r % len(ways)]:
            load = os.getloadavg()[0]
            result = open_page(
                PAGE % {"way": way, "ranks": args.ranks, "traces": TRACES_JS}, "first.html"
            )
            if result is None:
                print(f"| {way} | {r + 1} | {load:.1f} | no result (no browser) ||||")
                continue
            lines: list[list[int]] = result["lines"]  # type: ignore[assignment]
            heat: list[int] = result["heat"]  # type: ignore[assignment]
            warm: list[int] = result["warm"]  # type: ignore[assignment]
            worst = max(max(tasks) for tasks in lines)
            longest[way].append(worst)
            print(
                f"| {way} | {r + 1} | {load:.1f} | {' + '.join(map(str, warm))} | "
                f"{', '.join('+'.join(map(str, t)) for t in lines)} | {worst} | "
                f"{'+'.join(map(str, heat))} | "
                f"{', '.join(map(str, result['long'])) or 'none'} |",  # type: ignore[call-overload]
                flush=True,
            )
    print()
    for way, values in longest.items():
        if values:
            median = statistics.median(values)
            print(f"- {way}: longest line task, median over pages {median:.0f} ms")


if __name__ == "__main__":
    main()
