import type { Pool } from '../platform/db.js';
import { completePayment, type ClaimedJob, type FinalStatus } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

/** Records the acquirer's final answer (settled or failed) and counts it if it changed the row. */
export async function completeSettlement(
  pool: Pool,
  job: ClaimedJob,
  final: FinalStatus,
  paymentsTopic: string,
  counts: SettlementRunCounts,
): Promise<void> {
  const changed = await completePayment(pool, job.paymentId, final, paymentsTopic, new Date());
  if (!changed) return;
  settlementMetrics.completed.inc({ status: final.status });
  settlementMetrics.settleLatency.observe((Date.now() - job.paymentCreatedAt.getTime()) / 1000);
  if (final.status === 'settled') counts.settled++;
  else counts.failed++;
}
