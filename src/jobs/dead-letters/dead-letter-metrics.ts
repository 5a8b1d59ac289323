import { Counter } from 'prom-client';
import { metricsRegistry } from '../../platform/telemetry/metrics.js';

/**
 * Dead letters sent, of every job kind (settlement and refunds) and of poison records. The
 * metric keeps the name it was first published under (dashboards and alerts read it), although
 * it counts every kind.
 */
export const deadLetterMetrics = {
  sent: new Counter({
    name: 'settlement_dead_letters_total',
    help: 'Dead letters sent to the dead-letter topic (every job kind), by error class',
    labelNames: ['error_class'] as const,
    registers: [metricsRegistry],
  }),
};
