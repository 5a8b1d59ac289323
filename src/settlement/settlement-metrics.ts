import { Counter, Histogram } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';

/** Settlement's counters and its accepted-to-settled latency. */
export const settlementMetrics = {
  consumed: new Counter({
    name: 'settlement_events_consumed_total',
    help: 'Records read from the payments topic, by outcome',
    labelNames: ['outcome'] as const,
    registers: [metricsRegistry],
  }),
  deduplicated: new Counter({
    name: 'settlement_events_deduplicated_total',
    help: 'payment.created copies already processed (same event id)',
    registers: [metricsRegistry],
  }),
  attempts: new Counter({
    name: 'settlement_acquirer_attempts_total',
    help: 'Acquirer calls by result',
    labelNames: ['result'] as const,
    registers: [metricsRegistry],
  }),
  retried: new Counter({
    name: 'settlement_retries_scheduled_total',
    help: 'Transient failures scheduled for another attempt',
    registers: [metricsRegistry],
  }),
  completed: new Counter({
    name: 'settlement_payments_completed_total',
    help: 'Payments moved to a terminal state, by status',
    labelNames: ['status'] as const,
    registers: [metricsRegistry],
  }),
  settleLatency: new Histogram({
    name: 'settlement_accepted_to_terminal_seconds',
    help: 'From the payment being accepted (created_at) to its terminal state',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [metricsRegistry],
  }),
};
