import { Counter } from 'prom-client';
import type { Logger } from '../platform/telemetry/logger.js';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import type { JobKind } from './job-table.js';

/** The writes a worker makes on a job it claimed. */
export type JobWrite = 'complete' | 'retry' | 'failure' | 'dead';

/**
 * A job write that matched no row: the job's lease is no longer this claim's (it ran out and
 * another worker claimed the job, or the job is gone). Nothing was written; the worker stops
 * working the job and leaves it to its current owner.
 */
export class LeaseLostError extends Error {
  constructor(
    readonly kind: JobKind,
    readonly write: JobWrite,
    readonly jobId: string,
  ) {
    super(`${kind} job ${jobId}: lease lost before the ${write} write; nothing was written`);
    this.name = 'LeaseLostError';
  }
}

const leaseLost = new Counter({
  name: 'jobs_lease_lost_total',
  help: 'Job writes refused because the claim no longer held the lease (another worker claimed the job), by kind',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});

/** Counts one refused write and logs it, at most one line per interval. */
export type ReportLeaseLost = (error: LeaseLostError) => void;

/**
 * The lost leases of one kind of job: every one counted (`jobs_lease_lost_total{kind}`), one
 * warning for the first and then at most one per `intervalMs` with how many were lost since the
 * last line. A paused process loses all its leases at once: a few lines, not one per job.
 */
export function createLeaseLostLog(
  kind: JobKind,
  logger: Logger,
  intervalMs: number,
  now: () => number = Date.now,
): ReportLeaseLost {
  leaseLost.inc({ kind }, 0); // exported from the start, so a rate over it is defined
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return (error) => {
    leaseLost.inc({ kind });
    const at = now();
    if (at - lastLoggedAt < intervalMs) {
      unlogged++;
      return;
    }
    logger.warn(
      {
        job_kind: kind,
        write: error.write,
        job_id: error.jobId,
        lost_since_last_line: unlogged + 1,
      },
      `${kind} job lease lost before a write; not applied (another worker holds the job)`,
    );
    lastLoggedAt = at;
    unlogged = 0;
  };
}
