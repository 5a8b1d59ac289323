/** Number formats shared by the report's tables. */
export const ms = (value: number) => `${Math.round(value * 10) / 10} ms`;
export const perSecond = (value: number) => `${Math.round(value).toLocaleString('en')}/s`;
/** part / whole in percent, one decimal. */
export const percent = (part: number, whole: number) => Math.round((part / whole) * 1000) / 10;
export const latencies = (r: { p50: number; p95: number; p99: number }) =>
  `p50 ${ms(r.p50)}, p95 ${ms(r.p95)}, p99 ${ms(r.p99)}`;
/** Milliseconds to three decimals (CPU per payment). */
export const cpuMs = (value: number) => `${Math.round(value * 1000) / 1000} ms`;
/** A percentage with its sign: +3.1%, -2%. */
export const signedPercent = (value: number) => `${value >= 0 ? '+' : ''}${value}%`;
