import { currentTraceContext } from '../outbox/trace-context.js';
import { LeaseLostError } from '../jobs/lease-lost.js';
import type { CompletePayment } from './completion-batcher.js';
import type { ClaimedJob, FinalStatus } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

/**
 * Records the acquirer's final answer (settled or failed) and counts it if it changed the row.
 * Throws LeaseLostError when another claim holds the job now: nothing was written.
 */
export async function completeSettlement(
  complete: CompletePayment,
  job: ClaimedJob,
  final: FinalStatus,
  counts: SettlementRunCounts,
): Promise<void> {
  const outcome = await complete({
    paymentId: job.paymentId,
    leaseOwner: job.leaseOwner,
    final,
    trace: currentTraceContext(),
  });
  if (outcome === 'lease_lost') throw new LeaseLostError('settlement', 'complete', job.paymentId);
  if (outcome === 'unchanged') return;
  settlementMetrics.completed.inc({ status: final.status });
  settlementMetrics.settleLatency.observe((Date.now() - job.paymentCreatedAt.getTime()) / 1000);
  if (final.status === 'settled') counts.settled++;
  else counts.failed++;
}
