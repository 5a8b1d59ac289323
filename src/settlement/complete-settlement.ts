import { currentTraceContext } from '../outbox/trace-context.js';
import type { CompletePayment } from './completion-batcher.js';
import type { ClaimedJob, FinalStatus } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

/** Records the acquirer's final answer (settled or failed) and counts it if it changed the row. */
export async function completeSettlement(
  complete: CompletePayment,
  job: ClaimedJob,
  final: FinalStatus,
  counts: SettlementRunCounts,
): Promise<void> {
  const changed = await complete({ paymentId: job.paymentId, final, trace: currentTraceContext() });
  if (!changed) return;
  settlementMetrics.completed.inc({ status: final.status });
  settlementMetrics.settleLatency.observe((Date.now() - job.paymentCreatedAt.getTime()) / 1000);
  if (final.status === 'settled') counts.settled++;
  else counts.failed++;
}
