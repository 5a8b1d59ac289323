import { cappedExponentialDelay } from '../platform/resilience/backoff.js';
import type { Config } from '../platform/config/config.js';
import type { Queryable } from '../platform/database/db.js';
import type { KafkaClient } from '../platform/kafka/kafka.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { outboxMetrics } from './outbox-metrics.js';
import type { Claim, ClaimedEvent } from './outbox-repository.js';
import {
  createRelayProducer,
  RELAY_KAFKA_OPTIONS,
  relaySendBoundMs,
  type RelayProducer,
} from './relay-kafka.js';

export type RelayConfig = Pick<
  Config,
  | 'RELAY_BATCH_SIZE'
  | 'RELAY_POLL_INTERVAL_MS'
  | 'RELAY_LEASE_MS'
  | 'RELAY_MAX_ATTEMPTS'
  | 'OUTBOX_RETENTION_SECONDS'
> &
  Partial<Pick<Config, 'OUTAGE_LOG_INTERVAL_MS' | 'KAFKA_REQUEST_TIMEOUT_MS'>>;

export interface RelayDeps {
  /** Every statement is one autocommit statement, so the pool itself is enough. */
  db: Queryable;
  /** Made by createRelayKafka, so that sends fail fast and the loop's backoff takes over. */
  kafka: KafkaClient;
  logger: Logger;
  config: RelayConfig;
  /** Delay before retrying a refused row, given the attempts it has made (1, 2, ...). */
  retryDelayMs?: (attempts: number) => number;
  /** Runs after the broker acknowledged and before the rows are marked (fault injection). */
  afterPublish?: (events: readonly ClaimedEvent[]) => void | Promise<void>;
  /** Source of the backoff jitter, in [0, 1). */
  random?: () => number;
  /** Called when a claim came back full: there is a backlog (used to wake sibling workers). */
  onBacklog?: () => void;
  /**
   * How long before a claim's lease ends its rows are no longer sent (DESIGN 38). Defaults to
   * relaySendBoundMs(KAFKA_REQUEST_TIMEOUT_MS), the longest a send can take; must be below
   * RELAY_LEASE_MS. Tests that run relays on leases of a second or less set a smaller one.
   */
  leaseMarginMs?: number;
}

/** What the steps of one relay share: its dependencies, defaults filled in, and its producer. */
export interface RelayContext extends Required<
  Omit<RelayDeps, 'kafka' | 'afterPublish' | 'onBacklog'>
> {
  producer: RelayProducer;
  /** Counts and logs (once per interval) rows not sent because their lease was ending. */
  leaseEnding: LeaseEndingLog;
  afterPublish?: RelayDeps['afterPublish'];
  onBacklog?: RelayDeps['onBacklog'];
}

/** A claim as the relay holds it: its rows, its owner token, and when it must stop sending. */
export interface RelayClaim extends Claim {
  /**
   * performance.now() after which the rows are not sent: the claim's start plus RELAY_LEASE_MS
   * minus the lease margin (the longest a send can take). Measured from before the claim
   * statement was sent, on this process's monotonic clock: Postgres set the lease's end from a
   * later instant, so this is never later than the real end, whatever the clocks' offset.
   */
  sendBy: number;
}

/** What one round (claim, publish, mark) did. */
export interface RelayRunResult {
  /** Rows leased by this round. */
  claimed: number;
  /** Acknowledged by the broker and marked published. */
  published: number;
  /** Refused by the broker (too large, invalid): an attempt counted, retried later or parked. */
  rejected: number;
  /** Of the rejected, those that reached RELAY_MAX_ATTEMPTS. */
  parked: number;
  /** Kafka could not be reached: leases given back, no attempt counted. */
  kafkaUnavailable: boolean;
}

/** A fresh result for `claimed` rows. */
export function emptyRelayRunResult(claimed: number): RelayRunResult {
  return { claimed, published: 0, rejected: 0, parked: 0, kafkaUnavailable: false };
}

/** A refused row is retried after 1 s, 2 s, 4 s ... (capped at a minute) until it is parked. */
const defaultRetryDelayMs = (attempts: number): number =>
  cappedExponentialDelay(attempts, 1_000, 60_000);

/**
 * One relay's context: defaults filled in, its own producer (not connected yet). Throws when
 * RELAY_LEASE_MS does not exceed the lease margin: every batch would be given back unsent.
 */
export function createRelayContext(deps: RelayDeps): RelayContext {
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
  return {
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
}

/**
 * Rows a relay did not send because their lease was about to end (DESIGN 38): counted in
 * `outbox_lease_ending_unsent_total`, logged the first time and then at most once per interval
 * with how many rows since the last line (the outage-log pattern), never one line per row.
 */
export interface LeaseEndingLog {
  dropped(rows: number, leftMs: number): void;
}

export function createLeaseEndingLog(
  logger: Logger,
  intervalMs: number,
  now: () => number = Date.now,
): LeaseEndingLog {
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return {
    dropped(rows, leftMs) {
      outboxMetrics.leaseEndingUnsent.inc(rows);
      unlogged += rows;
      const at = now();
      if (at - lastLoggedAt < intervalMs) return;
      logger.warn(
        { rows_since_last_line: unlogged, lease_left_ms: Math.round(leftMs) },
        'outbox rows not sent: their lease ends before a send could finish; the relay that claims them next sends them',
      );
      lastLoggedAt = at;
      unlogged = 0;
    },
  };
}
