/**
 * The small part of plotly.js that the Throughput view uses (the basic bundle
 * ships no types).
 */
declare module 'plotly.js-basic-dist-min' {
  export interface Trace {
    x: number[];
    y: number[];
    name: string;
    type: 'scatter';
    mode: 'lines' | 'lines+markers';
    line?: { width?: number; dash?: string };
  }
  export function react(
    root: HTMLElement,
    data: Trace[],
    layout: Record<string, unknown>,
    config: Record<string, unknown>
  ): Promise<HTMLElement>;
  export function purge(root: HTMLElement): void;
}
