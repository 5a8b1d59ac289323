import type { Config } from '../platform/config.js';
import type { Queryable } from '../platform/db.js';
import type { KafkaClient } from '../platform/kafka.js';
import type { Logger } from '../platform/logger.js';
import type { LeaseEndingLog } from './lease-ending-log.js';
import type { ClaimedEvent } from './outbox-repository.js';
import type { RelayProducer } from './relay-producer.js';

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
   * How long before a claim's lease ends its rows are no longer sent (DESIGN 21). Defaults to
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
