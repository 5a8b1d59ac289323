import { describe, expect, it } from 'vitest';
import { createLeaseEndingLog } from '../../src/outbox/relay-context.js';
import { outboxMetrics } from '../../src/outbox/outbox-metrics.js';
import type { RelayConfig } from '../../src/outbox/relay-context.js';
import { createRelayKafka, relaySendBoundMs } from '../../src/outbox/relay-kafka.js';
import { createRelay } from '../../src/outbox/relay.js';
import type { Queryable } from '../../src/platform/database/db.js';
import { capturedLogger } from '../support/captured-logger.js';

const config: RelayConfig = {
  RELAY_BATCH_SIZE: 500,
  RELAY_POLL_INTERVAL_MS: 1_000,
  RELAY_LEASE_MS: 60_000,
  RELAY_MAX_ATTEMPTS: 5,
  OUTBOX_RETENTION_SECONDS: 3_600,
};

function relayWith(overrides: Partial<RelayConfig>, leaseMarginMs?: number) {
  const { logger } = capturedLogger();
  const kafka = createRelayKafka(
    { KAFKA_BROKERS: ['127.0.0.1:1'], KAFKA_CLIENT_ID: 'unit' },
    logger,
  );
  // Never queried: creating a relay connects nothing.
  const db = {} as Queryable;
  return () =>
    createRelay({ db, kafka, logger, config: { ...config, ...overrides }, leaseMarginMs });
}

describe('relay lease fence', () => {
  it('when the lease does not outlast the longest send, then the relay refuses to start; a longer lease or a smaller margin is accepted', () => {
    expect(relaySendBoundMs(10_000)).toBe(47_000);
    expect(relayWith({ RELAY_LEASE_MS: 1_000 })).toThrow(/RELAY_LEASE_MS \(1000\) must exceed/);
    // 15 s requests: a send may take 67 s, more than the default 60 s lease.
    expect(relayWith({ KAFKA_REQUEST_TIMEOUT_MS: 15_000 })).toThrow(/67000 ms/);
    expect(relayWith({})).not.toThrow();
    expect(relayWith({ RELAY_LEASE_MS: 1_000 }, 100)).not.toThrow();
  });

  it('when 1,000 batches are given back unsent over 25 s, then every row is counted and one line is logged per 10 s interval', async () => {
    const { lines, logger } = capturedLogger();
    let now = 0;
    const log = createLeaseEndingLog(logger, 10_000, () => now);
    const before = (await outboxMetrics.leaseEndingUnsent.get()).values[0]?.value ?? 0;
    for (let i = 0; i < 1_000; i++) {
      now = i * 25;
      log.dropped(3, 500);
    }
    const after = (await outboxMetrics.leaseEndingUnsent.get()).values[0]?.value ?? 0;
    expect(after - before).toBe(3_000);
    expect(lines.map((line) => [line.level, line.rows_since_last_line])).toEqual([
      [40, 3],
      [40, 1_200],
      [40, 1_200],
    ]);
  });
});
