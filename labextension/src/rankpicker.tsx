/**
 * Render-only: the Throughput tab's rank picker in the many-rank view. A
 * field to add ranks ("3, 17, 40-42", then Enter or Show), one chip per rank
 * shown (its colour; × removes it) and Clear. The Ranks tab's tiles add and
 * remove ranks in the same set (`shownranks.ts`).
 */

import * as React from 'react';

import { LabelledInput } from './field';
import { rankColor } from './palette';
import { MAX_SHOWN, type ShownRanks } from './shownranks';
import { useTrans } from './translate';

export function RankPicker(props: { shown: ShownRanks }): JSX.Element {
  const { shown } = props;
  const trans = useTrans();
  const [text, setText] = React.useState('');
  const add = (): void => {
    shown.add(text);
    setText('');
  };
  return (
    <div className="jp-Distributed-rankPicker" role="group" aria-label={trans.__('ranks shown in the plots')}>
      <LabelledInput
        label={trans.__('show ranks')}
        type="text"
        placeholder={trans.__('e.g. 3, 17, 40-42')}
        value={text}
        aria-label={trans.__('ranks to show in the plots')}
        title={trans.__(
          'Draw these ranks as their own lines (at most %1); the Ranks tab’s Plot buttons too',
          MAX_SHOWN
        )}
        onChange={e => setText(e.currentTarget.value)}
        onKeyDown={e => {
          if (e.key === 'Enter') {
            add();
          }
        }}
      />
      <button type="button" className="jp-Button" disabled={!text.trim() || shown.full} onClick={add}>
        {trans.__('Show')}
      </button>
      {shown.ranks.map(rank => (
        <button
          type="button"
          key={rank}
          className="jp-Button jp-Distributed-rankChip"
          aria-label={trans.__('Stop showing rank %1', rank)}
          title={trans.__('Stop showing rank %1', rank)}
          onClick={() => shown.remove(rank)}
        >
          <span className="jp-Distributed-rankSwatch" aria-hidden="true" style={{ background: rankColor(rank) }} />
          {trans.__('rank %1', rank)} ×
        </button>
      ))}
      {shown.ranks.length ? (
        <button type="button" className="jp-Button" onClick={() => shown.clear()}>
          {trans.__('Clear')}
        </button>
      ) : null}
    </div>
  );
}
