/**
 * One colour per rank, in every figure: the plots' rank lines, the rank tiles
 * and the Logs rank chip all take `rankColor(rank)`, so rank 3 is the same
 * colour everywhere. The palette is qualitative: plotly's Dark24 and Alphabet
 * colours that keep a contrast of at least 2.5 against both a light (white)
 * and a dark (#111) background, at least 20 ΔE apart from each other
 * (`tests/ts/palette.test.ts` checks both). Beyond 24 ranks the colours repeat.
 */

export const RANK_PALETTE: readonly string[] = [
  '#2E91E5',
  '#E15F99',
  '#1CA71C',
  '#FB0D0D',
  '#DA16FF',
  '#B68100',
  '#EB663B',
  '#511CFB',
  '#00A08B',
  '#FB00D1',
  '#FC0080',
  '#B2828D',
  '#6C7C32',
  '#778AAE',
  '#A777F1',
  '#DA60CA',
  '#AF0038',
  '#85660D',
  '#782AB6',
  '#565656',
  '#325A9B',
  '#90AD1C',
  '#B10DA1',
  '#C075A6'
];

/** The colour of `rank` in every figure, tile and chip. */
export function rankColor(rank: number): string {
  const n = RANK_PALETTE.length;
  return RANK_PALETTE[((Math.trunc(rank) % n) + n) % n] as string;
}
