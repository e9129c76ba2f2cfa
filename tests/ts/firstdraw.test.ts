import { describe, expect, it } from 'vitest';

import { lineLayout, scatterData } from '../../labextension/src/figures';
import { emptyOf, frameOf } from '../../labextension/src/firstdraw';
import { heatmapData } from '../../labextension/src/heatmapdata';

const theme = { font: '#444', grid: '#e5e5e5', background: '#fff' };

describe("a figure's first draw in two tasks", () => {
  it('draws the frame with the layout and the legend, and no trace drawn', () => {
    const layout = lineLayout(theme, { title: 's since start', range: [0, 20] }, 240, 'samples/s');
    const series = { x: [0, 1, 2], y: [3, 4, 5] };
    const data = scatterData(
      [
        { name: 'total', series },
        { name: 'rank 3 (straggler)', series, highlight: true }
      ],
      theme
    );
    const frame = frameOf({ data, layout });
    expect(frame.layout).toEqual(layout);
    expect(frame.data.map(t => (t as { visible: unknown }).visible)).toEqual(['legendonly', 'legendonly']);
    // The same traces otherwise (names, colours, points): the legend is the figure's.
    expect(frame.data.map(t => ({ ...(t as object), visible: undefined }))).toEqual(
      data.map(t => ({ ...t, visible: undefined }))
    );
    // The figure itself is left as it is: drawn next, every trace shown.
    expect(data.every(t => !('visible' in t))).toBe(true);
  });

  it('frames a heatmap the same way', () => {
    const [trace] = frameOf({
      data: heatmapData(
        [
          [null, 1],
          [2, null]
        ],
        'GB/s'
      ),
      layout: {}
    }).data;
    expect(trace).toMatchObject({ type: 'heatmap', visible: 'legendonly' });
  });

  it('passes empty first with the figure’s size and background, and no axis or legend', () => {
    const layout = lineLayout({ font: '#222', grid: '#ddd', background: '#fff' }, { title: 's' }, 240, 'MiB');
    const empty = emptyOf(layout);
    expect(empty).toMatchObject({
      height: 240,
      margin: layout.margin,
      paper_bgcolor: layout.paper_bgcolor,
      showlegend: false,
      xaxis: { visible: false },
      yaxis: { visible: false }
    });
    expect(JSON.stringify(empty)).not.toContain('MiB');
  });
});
