/**
 * Render-only: the Ranks tab. Up to `NODE_SUMMARY_ABOVE` ranks a tile per rank, grouped by
 * host; above, a line per node with the tiles of its ranks worth a look (at most
 * `NOTABLE_TILES` in all), every tile of a node on request; above `NODE_TILES_ABOVE` nodes
 * (10,000 ranks: 1,250 nodes) a small tile per node and one line for the run, the nodes opened
 * and the ranks worth a look below them.
 */

import * as React from 'react';
import type { RankTile } from './derive';
import {
  type IRanksData,
  NODE_TILES_ABOVE,
  NOTABLE_TILES,
  type NodeSummary,
  nodeMark,
  runSummary
} from './nodesummary';
import { formatRate, Tile } from './ranktile';
import { useTrans } from './translate';

/** The parts of a summary's line: ranks per state, stragglers. */
function countParts(summary: Omit<NodeSummary, 'host'>, trans: ReturnType<typeof useTrans>): string[] {
  const parts = summary.states.map(([state, count]) => trans.__('%1 %2', count, state));
  if (summary.stragglers) {
    parts.push(trans.__('%1 straggler(s)', summary.stragglers));
  }
  return parts;
}

/** The rates' part of a summary's line, or none before any rank has a rate. */
function rateText(summary: Omit<NodeSummary, 'host'>, trans: ReturnType<typeof useTrans>): string[] {
  return summary.medianRate !== null && summary.slowest !== null
    ? [
        trans.__(
          'samples/s per rank: median %1, slowest %2',
          formatRate(summary.medianRate),
          formatRate(summary.slowest)
        )
      ]
    : [];
}

/**
 * The tiles; `onStacks` (given while the run is running) puts a Stacks button on the tiles
 * that `hasStacks` accepts.
 */
export function RanksView(props: {
  data: IRanksData;
  onStacks?: (rank: number) => void;
  hasStacks?: (tile: RankTile) => boolean;
  /** The ranks drawn as their own lines; given (many ranks), each tile has a Plot toggle. */
  plotted?: ReadonlySet<number>;
  onPlot?: (rank: number) => void;
}): JSX.Element {
  const { hasStacks, data } = props;
  // One function for every tile and render (the caller's changes each render), so that tiles
  // that look the same are not rendered again.
  const latest = React.useRef(props.onStacks);
  latest.current = props.onStacks;
  const stacks = React.useCallback((rank: number) => latest.current?.(rank), []);
  const onStacks = props.onStacks ? stacks : undefined;
  const latestPlot = React.useRef(props.onPlot);
  latestPlot.current = props.onPlot;
  const plot = React.useCallback((rank: number) => latestPlot.current?.(rank), []);
  const onPlot = props.onPlot && props.plotted ? plot : undefined;
  const trans = useTrans();
  // Above NODE_SUMMARY_ABOVE ranks a node is one line plus its notable ranks' tiles, until asked.
  const [expanded, setExpanded] = React.useState<ReadonlySet<string>>(new Set());
  const toggle = React.useCallback(
    (host: string): void =>
      setExpanded(old => {
        const next = new Set(old);
        if (!next.delete(host)) {
          next.add(host);
        }
        return next;
      }),
    []
  );
  // Node tiles come NODE_TILES_STEP more a task: 1,250 at once were one task of 60-90 ms of CPU.
  const grown = useGrowing(data.nodes && data.nodes.length > NODE_TILES_ABOVE ? data.nodes.length : 0, NODE_TILES_STEP);
  const tiles = (list: readonly RankTile[]): JSX.Element | null =>
    list.length ? (
      <div role="list" className="jp-Distributed-tiles">
        {list.map(tile => (
          <Tile
            key={tile.rank}
            tile={tile}
            onStacks={onStacks && (hasStacks?.(tile) ?? true) ? onStacks : undefined}
            onPlot={onPlot}
            plotted={props.plotted?.has(tile.rank) ?? false}
          />
        ))}
      </div>
    ) : null;
  const hostName = (host: string): string => host || trans.__('unknown host');
  const section = (host: string, count: number, children: React.ReactNode): JSX.Element => (
    <section key={host} aria-label={trans.__('Host %1', host || trans.__('unknown'))}>
      <h3 className="jp-Distributed-host">
        {hostName(host)} ({count})
      </h3>
      {children}
    </section>
  );
  if (data.groups) {
    return data.groups.length ? (
      <div className="jp-Distributed-ranks" role="group" aria-label={trans.__('Ranks')}>
        {data.groups.map(group => section(group.host, group.tiles.length, tiles(group.tiles)))}
      </div>
    ) : (
      <p className="jp-Distributed-empty">{trans.__('No ranks reported yet')}</p>
    );
  }
  const nodes = data.nodes ?? [];
  const opened = (node: NodeSummary): JSX.Element =>
    section(
      node.host,
      node.ranks.length,
      <>
        <NodeLine summary={node} open onToggle={toggle} />
        {tiles(data.tiles(node.ranks))}
      </>
    );
  // The tiles of the ranks worth a look, at most NOTABLE_TILES (the others are counted).
  let budget = NOTABLE_TILES;
  let hidden = 0;
  const notable = (ranks: readonly number[]): RankTile[] => {
    const shown = ranks.slice(0, Math.max(0, budget));
    budget -= shown.length;
    hidden += ranks.length - shown.length;
    return data.tiles(shown);
  };
  const more = (): JSX.Element | null =>
    hidden ? (
      <p className="jp-Distributed-empty" role="status">
        {trans.__('%1 more ranks worth a look: counted in their node’s line or tile, shown when it is opened', hidden)}
      </p>
    ) : null;
  if (nodes.length <= NODE_TILES_ABOVE) {
    const sections = nodes.map(node =>
      expanded.has(node.host)
        ? opened(node)
        : section(
            node.host,
            node.ranks.length,
            <>
              <NodeLine summary={node} open={false} onToggle={toggle} />
              {tiles(notable(node.notable))}
            </>
          )
    );
    return (
      <div className="jp-Distributed-ranks" role="group" aria-label={trans.__('Ranks')}>
        {sections}
        {more()}
      </div>
    );
  }
  const run = runSummary(nodes, data.context);
  const mounted = grown;
  const open = nodes.filter(node => expanded.has(node.host));
  const inOpen = new Set(open.flatMap(node => node.ranks));
  const worth = notable(run.notable.filter(rank => !inOpen.has(rank)));
  const line = [
    trans.__('%1 ranks on %2 nodes', run.ranks.length, nodes.length),
    ...countParts(run, trans),
    ...rateText(run, trans)
  ].join(' · ');
  return (
    <div className="jp-Distributed-ranks" role="group" aria-label={trans.__('Ranks')}>
      <p className="jp-Distributed-nodeLine" role="status">
        {line}
      </p>
      <div className="jp-Distributed-nodeTiles" role="group" aria-label={trans.__('Nodes')}>
        {nodes.slice(0, mounted).map(node => (
          <NodeTile key={node.host} summary={node} open={expanded.has(node.host)} onToggle={toggle} />
        ))}
      </div>
      {open.map(opened)}
      {worth.length ? <h3 className="jp-Distributed-host">{trans.__('Ranks worth a look')}</h3> : null}
      {tiles(worth)}
      {more()}
    </div>
  );
}

/** Node tiles first drawn in one task at most; the others in the tasks after it. */
export const NODE_TILES_STEP = 200;

/** How many of `total` items to show: `step` at first, then `step` more in each task after. */
function useGrowing(total: number, step: number): number {
  const [shown, setShown] = React.useState(step);
  React.useEffect(() => {
    if (shown >= total) {
      return;
    }
    const timer = setTimeout(() => setShown(n => n + step), 0);
    return () => clearTimeout(timer);
  }, [shown, total, step]);
  return Math.min(shown, total);
}

interface INodeTileProps {
  summary: NodeSummary;
  open: boolean;
  onToggle: (host: string) => void;
}

/** Whether two node tiles look the same: their ranks per state and stragglers (not the rates). */
function sameNodeTile(a: INodeTileProps, b: INodeTileProps): boolean {
  const [x, y] = [a.summary, b.summary];
  return (
    a.open === b.open &&
    a.onToggle === b.onToggle &&
    x.host === y.host &&
    x.stragglers === y.stragglers &&
    x.states.length === y.states.length &&
    x.states.every(([state, n], i) => y.states[i]?.[0] === state && y.states[i]?.[1] === n)
  );
}

/**
 * A node as a small tile (many nodes): marked by its most urgent state; a click opens it below.
 * Rendered again only when its counts change (its label is translated text: 1,250 of them a
 * render were most of a 10,000-rank render's work).
 */
const NodeTile = React.memo(function NodeTile(props: INodeTileProps): JSX.Element {
  const { summary, onToggle } = props;
  const trans = useTrans();
  const label = trans.__(
    'Node %1: %2',
    summary.host || trans.__('unknown host'),
    countParts(summary, trans).join(' · ')
  );
  return (
    <button
      type="button"
      className={`jp-Distributed-nodeTile jp-mod-${nodeMark(summary)}`}
      aria-label={label}
      aria-pressed={props.open}
      title={label}
      onClick={() => onToggle(summary.host)}
    />
  );
}, sameNodeTile);

/** A node's ranks in one line (many ranks), with the button that shows or hides every tile. */
function NodeLine(props: { summary: NodeSummary; open: boolean; onToggle: (host: string) => void }): JSX.Element {
  const trans = useTrans();
  const { summary } = props;
  const parts = [...countParts(summary, trans), ...rateText(summary, trans)];
  return (
    <div className="jp-Distributed-nodeLine" role="status">
      <span>{parts.join(' · ')}</span>{' '}
      <button
        type="button"
        className="jp-Button jp-Distributed-nodeToggle"
        onClick={() => props.onToggle(summary.host)}
      >
        {props.open ? trans.__('Fold to the summary') : trans.__('Show all %1 ranks', summary.ranks.length)}
      </button>
    </div>
  );
}
