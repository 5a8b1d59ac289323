/**
 * The durable job kinds and their tables. Each kind keeps its jobs in a table of its own, keyed
 * by the resource the job works on (one job per payment, one per refund): the primary key is the
 * enqueue's idempotency, and the claim joins the resource by that key. Every table has the same
 * job columns (migrations 0006, 0012, 0020): state (pending | dead), attempts, next_attempt_at,
 * locked_until, lease_owner, first_failure_at, last_failure_at, last_error_class, last_error,
 * replay_token, revived_at, needs_inquiry, last_inquiry, not_sent (0027). All SQL over those
 * columns is in src/jobs/ (DESIGN 59).
 */
export type JobKind = 'settlement' | 'refund' | 'webhook' | 'hold';

export interface JobTable {
  kind: JobKind;
  /** The table's name, trusted (never from input): it is spliced into the statements. */
  table: 'settlement_jobs' | 'refund_jobs' | 'webhook_delivery_jobs' | 'hold_jobs';
  /** The primary key: the id of the resource the job works on. */
  idColumn: 'payment_id' | 'refund_id' | 'delivery_id';
}

export const SETTLEMENT_JOBS: JobTable = {
  kind: 'settlement',
  table: 'settlement_jobs',
  idColumn: 'payment_id',
};

export const REFUND_JOBS: JobTable = {
  kind: 'refund',
  table: 'refund_jobs',
  idColumn: 'refund_id',
};

/**
 * One job per authorized manual payment (issue 40, migration 0037): due at its capture_before
 * (the expiry), or at once when a capture or cancel is decided; it captures or voids the hold.
 */
export const HOLD_JOBS: JobTable = {
  kind: 'hold',
  table: 'hold_jobs',
  idColumn: 'payment_id',
};

/** One job per webhook delivery (migration 0023): one event to one endpoint. */
export const WEBHOOK_JOBS: JobTable = {
  kind: 'webhook',
  table: 'webhook_delivery_jobs',
  idColumn: 'delivery_id',
};

/** Why an attempt, or the step after it, did not end the job. */
export interface Failure {
  errorClass: string;
  message: string;
  /** The earliest the job may be tried again, in ms from now (a Retry-After), if it said. */
  notBeforeMs?: number;
  /**
   * Whether the call may have reached the other side (DESIGN 106): `not_sent` (it never did: not
   * an attempt), `unknown` (it may have: ask before calling again); absent: it answered.
   */
  delivery?: 'not_sent' | 'unknown';
}

/** What every claimed job carries, whatever its kind. */
export interface ClaimedJob {
  /** The job's id: its resource's (payment id, refund id). */
  id: string;
  /** This claim's token (`lease_owner`): every later write on the job matches it. */
  leaseOwner: string;
  /** Attempts started, this one included (counted by the claim, before the work). */
  attempts: number;
  /**
   * Every attempt is used up and the last one's outcome never reached the database (a crash, a
   * lease that ran out, a failed completion): dead-letter it, do not attempt again.
   */
  exhausted: boolean;
  /** The failure recorded by the previous attempt, if any. */
  lastFailure: Failure | null;
  firstFailureAt: Date | null;
  /** The last call's outcome is unknown: ask (the kind's inquire) before calling again. */
  needsInquiry: boolean;
  /** The other side's latest answer to an inquiry ('not_found', 'approved', ...), if any. */
  lastInquiry: string | null;
  /** Calls that never reached the other side (not attempts). */
  notSent: number;
}

/** A claimed job as its later writes name it: the job and the claim's token. */
export type JobLease = Pick<ClaimedJob, 'id' | 'leaseOwner'>;

/**
 * When a pending job may be claimed: once it is due and its lease (if any) has ended, so an
 * expired lease is the recovery sweep (a worker that died holding a job loses it then). The
 * expression of the settlement_jobs_claimable index (migration 0018), spelled the same here so
 * the planner uses it: leased jobs sort last, so a claim reads only the jobs it takes.
 */
export const CLAIMABLE_AT = 'greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))';
