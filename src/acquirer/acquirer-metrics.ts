import { Counter } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';

/** What the acquirer's callers count of their calls that are not charges or refunds. */
export const acquirerMetrics = {
  inquiries: new Counter({
    name: 'acquirer_inquiries_total',
    help: 'Status inquiries at the acquirer after an unknown outcome, by kind (charge, refund) and result (found, not_found, or the error class)',
    labelNames: ['kind', 'result'] as const,
    registers: [metricsRegistry],
  }),
};
