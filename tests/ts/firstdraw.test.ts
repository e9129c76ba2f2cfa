import { describe, expect, it } from 'vitest';

import { lineLayout } from '../../labextension/src/figures';
import { frameOf } from '../../labextension/src/firstdraw';

const theme = { font: '#444', grid: '#e5e5e5', background: '#fff' };

describe("a figure's first draw in two tasks", () => {
  it('draws the frame without the legend and the automargins, the rest of the layout kept', () => {
    const layout = lineLayout(theme, { title: 's since start', range: [0, 20] }, 240, 'samples/s');
    const frame = frameOf(layout);
    expect(frame.showlegend).toBe(false);
    expect(frame.xaxis).toEqual({ ...(layout.xaxis as object), automargin: false });
    expect(frame.yaxis).toEqual({ ...(layout.yaxis as object), automargin: false });
    const { showlegend: _a, xaxis: _b, yaxis: _c, ...rest } = frame;
    const { showlegend: _d, xaxis: _e, yaxis: _f, ...same } = layout;
    expect(rest).toEqual(same);
    // The figure's own layout is left as it is: drawn next, with its legend and automargins.
    expect(layout.showlegend).toBe(true);
    expect((layout.xaxis as { automargin: boolean }).automargin).toBe(true);
  });

  it('turns automargin off on every axis of a layout with several, and leaves other keys alone', () => {
    const frame = frameOf({ xaxis2: { automargin: true }, yaxis3: { automargin: true, title: 'y' }, axisless: 1 });
    expect(frame).toEqual({
      showlegend: false,
      xaxis2: { automargin: false },
      yaxis3: { automargin: false, title: 'y' },
      axisless: 1
    });
  });
});
