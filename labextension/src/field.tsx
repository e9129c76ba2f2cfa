/**
 * Render-only: a labelled control of the Throughput tab's bar (the smoothing
 * slider, the rank picker's field): its label text, the input, and what
 * follows it inside the label (the slider's value).
 */

import * as React from 'react';

export function LabelledInput(
  props: { label: string; children?: React.ReactNode } & React.InputHTMLAttributes<HTMLInputElement>
): JSX.Element {
  const { label, children, ...input } = props;
  return (
    <label className="jp-Distributed-smoothing">
      {label}
      <input aria-label={label} {...input} />
      {children}
    </label>
  );
}
