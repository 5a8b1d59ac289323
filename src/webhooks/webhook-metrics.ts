import { Counter, Histogram } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';

/** How one delivery attempt (or a delivery ended without one) came out. */
export const WEBHOOK_DELIVERY_OUTCOMES = [
  /** 2xx: delivered. */
  'delivered',
  /** Any other answer, a timeout, a connection error or a refused address, with retries left. */
  'retried',
  /** The last scheduled attempt failed: the delivery failed. */
  'exhausted',
  /** 410: the endpoint disabled ('gone'). */
  'gone',
  /** The endpoint was disabled before the attempt: failed without sending. */
  'endpoint_disabled',
  /** The claim lost its lease before recording; another worker owns the delivery. */
  'lease_lost',
  /** The attempt's database step failed; the job is retried. */
  'error',
] as const;
export type WebhookDeliveryOutcome = (typeof WEBHOOK_DELIVERY_OUTCOMES)[number];

/** The delivery worker's metrics (its jobs' depth and age: src/jobs/job-metrics.ts, kind webhook). */
export const webhookMetrics = {
  deliveries: new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered, retried, exhausted, gone, endpoint_disabled, lease_lost, error)',
    labelNames: ['outcome'] as const,
    registers: [metricsRegistry],
  }),
  duration: new Histogram({
    name: 'webhook_delivery_duration_seconds',
    help: 'Time from sending a webhook to its answer (or timeout, or connection failure), by result (2xx, 3xx, 4xx, 5xx, timeout, address_refused, connection_error)',
    labelNames: ['result'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [metricsRegistry],
  }),
};
// Every outcome exported from the start, so a rate over any of them is defined.
for (const outcome of WEBHOOK_DELIVERY_OUTCOMES) webhookMetrics.deliveries.inc({ outcome }, 0);
