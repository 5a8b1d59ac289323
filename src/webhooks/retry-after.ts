/**
 * A Retry-After header (RFC 9110 10.2.3: delay-seconds or an HTTP-date) as milliseconds from
 * `nowMs`; null when absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1_000;
  if (!/[a-z]/i.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}
