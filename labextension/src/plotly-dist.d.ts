/** plotly.js' partial bundle (scatter, heatmap and the other cartesian traces) ships no types. */
declare module 'plotly.js-cartesian-dist-min' {
  const Plotly: unknown;
  export default Plotly;
}
