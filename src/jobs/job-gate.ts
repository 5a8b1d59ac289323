/**
 * What stands between a job kind's workers and the other side they call (the acquirer's circuit
 * breaker, DESIGN 107): whether to claim, whether a claimed job may call, and what each call's
 * delivery was. The engine asks it; the kind's process builds it (one per outside system, shared
 * by the kinds that call it).
 */
export interface CallGate {
  /** How many of `limit` jobs may be claimed now: all while closed, 0 while open, 1 probe. */
  admit: (limit: number) => number;
  /**
   * A claim admitted by `admit` found no job: a probe's place goes back at once, so another
   * kind sharing the gate (charges and refunds share the acquirer's) can take it.
   */
  unused: () => void;
  /** How long until a claim may be admitted again (0: now). */
  blockedForMs: () => number;
  /** Claims run freely: an intake claims what it records only then. */
  readonly closed: boolean;
  /** Whether a claimed job may call now; false: the job is put back, not sent. */
  tryCall: () => boolean;
  /** A call's delivery: any answer (`answered`), or a failure that never reached or may have. */
  record: (delivery: 'answered' | 'not_sent' | 'unknown', error?: unknown) => void;
  /** Listens for the gate closing (claims may resume): the workers wake. */
  onClose: (listener: () => void) => void;
}
