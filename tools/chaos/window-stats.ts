/** The requests answered during one fault's window: counts and latency, and its bound. */
export interface WindowStats {
  label: string;
  fromMs: number;
  toMs: number;
  /** POST /payments answered in the window. */
  posts: number;
  /** Any request answered 5xx or not at all in the window. */
  failures: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** The bound for this fault, and whether the window met it (only with a bound). */
  bound: string | null;
  boundMet: boolean | null;
}
