import { Counter } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';

/** The refund worker's counters (its jobs' depth and age: src/jobs/job-metrics.ts). */
export const refundMetrics = {
  attempts: new Counter({
    name: 'refund_acquirer_attempts_total',
    help: 'Acquirer refund calls by result (approved, declined, or a transient class)',
    labelNames: ['result'] as const,
    registers: [metricsRegistry],
  }),
  completed: new Counter({
    name: 'refunds_completed_total',
    help: 'Refunds moved to a terminal state, by status (succeeded, failed)',
    labelNames: ['status'] as const,
    registers: [metricsRegistry],
  }),
};
