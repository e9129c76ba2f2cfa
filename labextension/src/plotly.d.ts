/**
 * The small part of plotly.js that the Scaling views use (the
 * basic bundle ships no types; its scatter traces with coloured square markers
 * draw the probe's heatmap).
 */
declare module 'plotly.js-basic-dist-min' {
  export interface Trace {
    x: number[];
    y: number[];
    name: string;
    type: 'scatter';
    mode: 'lines' | 'lines+markers' | 'markers';
    line?: { width?: number; dash?: string };
    marker?: Record<string, unknown>;
    text?: string[];
    hovertemplate?: string;
  }
  export function react(
    root: HTMLElement,
    data: Trace[],
    layout: Record<string, unknown>,
    config: Record<string, unknown>
  ): Promise<HTMLElement>;
  export function purge(root: HTMLElement): void;
}
