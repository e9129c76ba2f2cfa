/**
 * What every canvas figure of the panel shares (the line plots of
 * `plotcanvas.ts`, the heatmap of `heatcanvas.ts`): the theme's colours and
 * font, a canvas sized at the screen's pixel density, the frame's margins and
 * the axes' tick labels.
 */

/** The colours and font a plot is drawn with. */
export interface ITheme {
  font: string;
  grid: string;
  family: string;
  colorway: string[];
}

/** plotly's default colours, for a page without JupyterLab's theme variables. */
const FALLBACK_COLORWAY = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

/** The theme's colours (JupyterLab's CSS variables), so plots follow light and dark themes. */
export function themeColors(node: HTMLElement): ITheme {
  const style = getComputedStyle(node);
  const v = (name: string): string => style.getPropertyValue(name).trim();
  const colorway = [
    '--jp-brand-color1',
    '--jp-warn-color1',
    '--jp-success-color1',
    '--jp-error-color1',
    '--jp-accent-color1',
    '--jp-brand-color3',
    '--jp-warn-color3',
    '--jp-success-color3'
  ]
    .map(v)
    .filter(Boolean);
  return {
    font: v('--jp-ui-font-color1') || style.color,
    grid: v('--jp-border-color2') || 'rgba(128, 128, 128, 0.3)',
    family: v('--jp-ui-font-family') || 'sans-serif',
    colorway: colorway.length ? colorway : FALLBACK_COLORWAY
  };
}

/**
 * The labels' font size and the frame's margins above and below the plot area (below: tick
 * labels, then the x axis' title), in CSS pixels.
 */
export const FONT_PX = 11;
export const TOP = 8;
export const BOTTOM = 2 * FONT_PX + 14;

/**
 * `canvas` sized to `width` × `height` CSS pixels (its CSS height set too) at the screen's pixel
 * density and cleared, its context scaled to CSS pixels, in the theme's font.
 */
export function prepareCanvas(
  canvas: HTMLCanvasElement,
  width: number,
  height: number,
  theme: ITheme
): CanvasRenderingContext2D {
  const ctx = canvas.getContext('2d');
  if (!ctx) {
    throw new Error('no 2D canvas context');
  }
  const ratio = typeof devicePixelRatio === 'number' && devicePixelRatio > 0 ? devicePixelRatio : 1;
  const pixelWidth = Math.round(width * ratio);
  const pixelHeight = Math.round(height * ratio);
  if (canvas.width !== pixelWidth || canvas.height !== pixelHeight) {
    canvas.width = pixelWidth; // also clears it
    canvas.height = pixelHeight;
  }
  if (canvas.style.height !== `${height}px`) {
    canvas.style.height = `${height}px`;
  }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = labelFont(theme);
  return ctx;
}

/** The font of the labels, as a canvas' `font`. */
export function labelFont(theme: ITheme): string {
  return `${FONT_PX}px ${theme.family}`;
}

/** A tick's label and where it goes along its axis, in CSS pixels. */
export interface ITickLabel {
  at: number;
  label: string;
}

/** The plot area's left edge: room for the widest of the y axis' `labels`. */
export function leftEdge(ctx: CanvasRenderingContext2D, labels: readonly string[]): number {
  return Math.ceil(Math.max(24, ...labels.map(l => ctx.measureText(l).width)) + 10);
}

/**
 * Labels of a vertical axis, middle-aligned on their ticks: right-aligned left of `x` (a y axis),
 * or left-aligned right of it (a colour bar).
 */
export function drawYLabels(
  ctx: CanvasRenderingContext2D,
  ticks: readonly ITickLabel[],
  x: number,
  side: 'left' | 'right'
): void {
  ctx.textAlign = side === 'left' ? 'right' : 'left';
  ctx.textBaseline = 'middle';
  for (const t of ticks) {
    ctx.fillText(t.label, side === 'left' ? x - 6 : x + 6, t.at);
  }
}

/**
 * Labels of the x axis under `bottom`, centred on their ticks but kept inside the canvas' `width`
 * (a tick on the plot's right edge), and `title` under them, centred on `middle`.
 */
export function drawXLabels(
  ctx: CanvasRenderingContext2D,
  ticks: readonly ITickLabel[],
  bottom: number,
  title: string,
  middle: number,
  width: number
): void {
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const t of ticks) {
    const half = ctx.measureText(t.label).width / 2;
    ctx.fillText(t.label, Math.max(half, Math.min(t.at, width - half)), bottom + 4);
  }
  ctx.fillText(title, middle, bottom + 8 + FONT_PX);
}
