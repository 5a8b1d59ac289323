import type { Pool } from '../platform/db.js';
import { scheduleRetry } from './settlement-job-failures.js';
import type { ClaimedJob, Failure } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

/**
 * The job waits in the database for `delayMs`, so its backoff never holds back another job.
 * Throws LeaseLostError (nothing written, nothing counted) when another claim holds the job.
 */
export async function scheduleSettlementRetry(
  pool: Pool,
  job: ClaimedJob,
  failure: Failure,
  delayMs: number,
  counts: SettlementRunCounts,
): Promise<void> {
  await scheduleRetry(pool, job, failure, delayMs);
  settlementMetrics.retried.inc();
  counts.retried++;
}
