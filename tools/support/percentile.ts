/**
 * The nearest-rank percentile of `sorted` (ascending): the smallest value with at least p% of
 * the values at or below it, always one of the values. No samples is an error, not a figure:
 * 0 or NaN would land in a report (NaN as JSON null) and compare as "within target".
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new RangeError('percentile of no samples');
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[rank - 1] as number;
}
