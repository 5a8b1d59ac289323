import { cappedExponentialDelay } from '../platform/backoff.js';
import { createLeaseEndingLog } from './lease-ending-log.js';
import { createLoopWaiter } from './loop-waiter.js';
import { purgePublished } from './outbox-repository.js';
import { PURGE_BATCH_SIZE } from './purge-published-rows.js';
import type { RelayContext, RelayDeps, RelayRunResult } from './relay-context.js';
import { RELAY_KAFKA_OPTIONS, relaySendBoundMs } from './relay-kafka.js';
import { createRelayProducer } from './relay-producer.js';
import { runOnce } from './run-once.js';
import { runRelayLoop } from './run-relay-loop.js';

/** A refused row is retried after 1 s, 2 s, 4 s ... (capped at a minute) until it is parked. */
const defaultRetryDelayMs = (attempts: number): number =>
  cappedExponentialDelay(attempts, 1_000, 60_000);

export interface Relay {
  /** Claims one batch, publishes it, marks it. Not reentrant: one round at a time. */
  runOnce: () => Promise<RelayRunResult>;
  /** Deletes one batch of rows published longer than the retention ago; returns how many. */
  purgeOnce: (limit?: number) => Promise<number>;
  /** Connects the producer (for readiness); rounds connect by themselves when needed. */
  connect: () => Promise<void>;
  /** A hint that rows may be waiting (a notification); cuts an idle wait short. */
  wake: () => void;
  /** Loops until stop(): rounds while there is work, idle waits otherwise, backoff on failures. */
  run: () => Promise<void>;
  /** Ends the loop after its current round and disconnects the producer. */
  stop: () => Promise<void>;
}

/**
 * One relay: its own producer and loop over the steps claim -> publish -> record the outcome
 * (mark published, count a failed attempt or park, release), see runOnce and drainOutbox.
 */
export function createRelay(deps: RelayDeps): Relay {
  const leaseMarginMs =
    deps.leaseMarginMs ??
    relaySendBoundMs(deps.config.KAFKA_REQUEST_TIMEOUT_MS ?? RELAY_KAFKA_OPTIONS.requestTimeout);
  if (deps.config.RELAY_LEASE_MS <= leaseMarginMs) {
    // Every batch would be given back unsent: refuse to start rather than never publish.
    throw new Error(
      `RELAY_LEASE_MS (${deps.config.RELAY_LEASE_MS}) must exceed the longest relay send ` +
        `(${leaseMarginMs} ms with KAFKA_REQUEST_TIMEOUT_MS): a batch is only sent while its ` +
        'lease outlasts the send',
    );
  }
  const ctx: RelayContext = {
    db: deps.db,
    logger: deps.logger,
    config: deps.config,
    producer: createRelayProducer(deps.kafka),
    retryDelayMs: deps.retryDelayMs ?? defaultRetryDelayMs,
    random: deps.random ?? Math.random,
    afterPublish: deps.afterPublish,
    onBacklog: deps.onBacklog,
    leaseMarginMs,
    leaseEnding: createLeaseEndingLog(deps.logger, deps.config.OUTAGE_LOG_INTERVAL_MS ?? 30_000),
  };
  const waiter = createLoopWaiter();
  let loop: Promise<void> | undefined;
  return {
    runOnce: () => runOnce(ctx),
    purgeOnce: (limit = PURGE_BATCH_SIZE) =>
      purgePublished(ctx.db, ctx.config.OUTBOX_RETENTION_SECONDS, limit),
    connect: async () => {
      await ctx.producer.connected();
    },
    wake: waiter.wake,
    run: () => (loop ??= runRelayLoop(ctx, waiter)),
    stop: async () => {
      waiter.stop();
      await loop;
      await ctx.producer.close();
    },
  };
}
