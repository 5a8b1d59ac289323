import { Counter, Gauge, Histogram } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import type { OutboxBacklog } from './outbox-repository.js';

/**
 * The relay's metrics. Counters and the lag histogram are updated as the relay works; the
 * backlog gauges are read from the database when /metrics is scraped (a scrape is rare, a
 * relay iteration is not), through the probe the relay role registers.
 */

let backlogProbe: (() => Promise<OutboxBacklog>) | undefined;
let lastBacklog: OutboxBacklog = { pending: 0, oldestPendingSeconds: 0, parked: 0 };

/** One scrape reads the backlog once for all three gauges. */
let pendingRead: Promise<OutboxBacklog> | undefined;
async function backlog(): Promise<OutboxBacklog> {
  if (!backlogProbe) return lastBacklog;
  pendingRead ??= backlogProbe()
    .then((value) => (lastBacklog = value))
    // A scrape during a database outage reports the last known values rather than failing.
    .catch(() => lastBacklog)
    .finally(() => {
      pendingRead = undefined;
    });
  return pendingRead;
}

/**
 * Makes the backlog gauges read through `probe` (the relay's database). Returns the function
 * that removes it again. With several relays in one process the last one registered is read:
 * they all look at the same table.
 */
export function registerBacklogProbe(probe: () => Promise<OutboxBacklog>): () => void {
  backlogProbe = probe;
  return () => {
    if (backlogProbe === probe) backlogProbe = undefined;
  };
}

export const outboxMetrics = {
  backlog: new Gauge({
    name: 'outbox_backlog_rows',
    help: 'Outbox rows not yet published (parked rows excluded)',
    registers: [metricsRegistry],
    async collect() {
      this.set((await backlog()).pending);
    },
  }),
  oldestPendingAge: new Gauge({
    name: 'outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest unpublished outbox row; 0 when none is pending',
    registers: [metricsRegistry],
    async collect() {
      this.set((await backlog()).oldestPendingSeconds);
    },
  }),
  parkedRows: new Gauge({
    name: 'outbox_parked_rows',
    help: 'Outbox rows parked after too many refused publishes; each needs a human',
    registers: [metricsRegistry],
    async collect() {
      this.set((await backlog()).parked);
    },
  }),
  /** Buckets around the 50 ms p99 target, up to the minutes of a Kafka outage. */
  lag: new Histogram({
    name: 'outbox_publish_lag_seconds',
    help: 'From the outbox row being written to the broker acknowledging it',
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [metricsRegistry],
  }),
  published: new Counter({
    name: 'outbox_published_total',
    help: 'Outbox rows acknowledged by the broker (a republished copy counts again)',
    registers: [metricsRegistry],
  }),
  failed: new Counter({
    name: 'outbox_publish_failures_total',
    help: 'Outbox rows whose publish failed: kafka_unavailable (no attempt counted) or rejected',
    labelNames: ['reason'] as const,
    registers: [metricsRegistry],
  }),
  parked: new Counter({
    name: 'outbox_parked_total',
    help: 'Outbox rows parked after RELAY_MAX_ATTEMPTS refused publishes',
    registers: [metricsRegistry],
  }),
  leaseEndingUnsent: new Counter({
    name: 'outbox_lease_ending_unsent_total',
    help: 'Claimed outbox rows not sent because their lease ends before a send could finish (another relay sends them)',
    registers: [metricsRegistry],
  }),
  kafkaUnavailable: new Counter({
    name: 'outbox_relay_kafka_unavailable_total',
    help: 'Relay iterations that found Kafka unreachable and backed off',
    registers: [metricsRegistry],
  }),
};
