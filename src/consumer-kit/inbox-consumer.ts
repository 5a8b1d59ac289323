import type { Consumer, Kafka } from 'kafkajs';
import type { Pool } from 'pg';
import {
  applyEvent,
  type ApplyOptions,
  type EventHandler,
  type OutOfOrderPolicy,
  type RecordPosition,
} from './apply-event.js';
import { createRetentionCheck, sweepGaps } from './gap-sweep.js';
import { inboxTables } from './inbox-schema.js';
import type { GapHandler, OrderGap } from './order-gap.js';
import type { GapResult } from './resolve-gap.js';
import { parseCloudEvent, type CloudEvent } from './parse-cloud-event.js';
import { withTimeout } from './with-timeout.js';

export interface InboxConsumerOptions {
  /** The consumer's kafkajs client (its brokers, client id, TLS/SASL, request timeouts). */
  kafka: Kafka;
  groupId: string;
  /** Default `payments.events`. */
  topic?: string;
  /** The consumer's own database, holding the inbox tables (ensureInboxSchema) and its data. */
  pool: Pool;
  /** The consumer's write, run once per event on the kit's transaction (context.client). */
  handler: EventHandler;
  /** Prefix of the kit's tables (default `consumer_inbox`). */
  tablePrefix?: string;
  /** An out-of-order event is parked until its predecessor arrives (default), refused, or applied. */
  outOfOrder?: OutOfOrderPolicy;
  /** Called after the transaction that parked, refused or applied an out-of-order event committed. */
  onOutOfOrder?: (report: OutOfOrderReport) => void;
  /**
   * Decides a parked event whose predecessor is not coming (README, "Gaps"): apply it (with the
   * payment fetched anew as its data, or as it is), skip it, or wait longer. Default: apply.
   */
  onGap?: GapHandler;
  /** How long a parked event waits for its predecessor before onGap is asked (5 minutes). */
  gapAfterMs?: number;
  /** How often parked events are looked at (every 10 s, or gapAfterMs when shorter). */
  gapCheckMs?: number;
  /** Called after the transaction that carried out onGap's decision committed. */
  onGapDecided?: (report: { gap: OrderGap; outcome: GapResult['outcome'] }) => void;
  /** Called for a record that is no CloudEvent: it is counted and skipped (no id to deduplicate by). */
  onInvalid?: (report: { position: RecordPosition; reason: string }) => void;
  /**
   * Called when an event's transaction failed; kafkajs retries the record (offset not committed).
   * A failed gap sweep is reported here too, with partition -1 (the next sweep tries again).
   */
  onError?: (error: unknown, position: RecordPosition) => void;
  /** Bounds connecting to Postgres, each statement and lock wait, and each handler call (10 s). */
  timeoutMs?: number;
  /** Bounds connecting and subscribing to Kafka, and stop() (30 s). */
  kafkaTimeoutMs?: number;
  /** Partitions handled at once, each in offset order (default 1). */
  partitionsConsumedConcurrently?: number;
  /** Where a new group starts: the earliest offset (default) or the latest. */
  fromBeginning?: boolean;
}

export interface OutOfOrderReport {
  event: CloudEvent;
  problem: string;
  policy: OutOfOrderPolicy;
  position: RecordPosition;
}

/** Counts since start(); each outcome counted once per committed transaction. */
export interface InboxCounters {
  /** Events whose handler ran and committed (released parked events included). */
  applied: number;
  /** Copies of events applied, parked or refused before: skipped. */
  duplicates: number;
  outOfOrder: number;
  parked: number;
  refused: number;
  /** Parked events applied once their predecessor arrived. */
  released: number;
  invalid: number;
  /** Transactions that failed (the record comes again). */
  failed: number;
  /** Parked events whose gap was reported to onGap (each time it was asked). */
  gaps: number;
  /** Parked events skipped by onGap's decision (never applied). */
  skipped: number;
}

export interface InboxConsumer {
  /** Connects, subscribes and starts consuming; resolves once running. */
  start(): Promise<void>;
  /** Stops fetching, lets the event in flight finish (bounded), commits offsets, disconnects. */
  stop(): Promise<void>;
  counters(): Readonly<InboxCounters>;
}

/**
 * A Kafka consumer of payments.events that gives `handler` each event exactly once in effect:
 * each record's event goes through applyEvent (one transaction: inbox row, order check, the
 * handler's write), and kafkajs resolves, hence commits, the record's offset only after that
 * transaction committed. A crash in between redelivers the record; the inbox skips it.
 */
export function createInboxConsumer(options: InboxConsumerOptions): InboxConsumer {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const kafkaTimeoutMs = options.kafkaTimeoutMs ?? 30_000;
  const apply: ApplyOptions = {
    pool: options.pool,
    tables: inboxTables(options.tablePrefix),
    handler: options.handler,
    policy: options.outOfOrder ?? 'park',
    timeoutMs,
  };
  const counters: InboxCounters = {
    applied: 0,
    duplicates: 0,
    outOfOrder: 0,
    parked: 0,
    refused: 0,
    released: 0,
    invalid: 0,
    failed: 0,
    gaps: 0,
    skipped: 0,
  };
  let consumer: Consumer | undefined;
  const topic = options.topic ?? 'payments.events';
  const gapAfterMs = options.gapAfterMs ?? 300_000;
  const gapCheckMs = options.gapCheckMs ?? Math.min(10_000, gapAfterMs);
  const retention = createRetentionCheck({
    kafka: options.kafka,
    pool: options.pool,
    inbox: apply.tables.inbox,
    timeoutMs,
    kafkaTimeoutMs,
  });
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> = Promise.resolve();

  const counted = (results: GapResult[]) => {
    for (const { outcome, gap, released } of results) {
      counters.applied += released.length + (outcome === 'applied' ? 1 : 0);
      if (outcome === 'released') counters.released += released.length;
      if (outcome === 'skipped') counters.skipped += 1;
      if (gap === null) continue;
      counters.gaps += 1;
      options.onGapDecided?.({ gap, outcome });
    }
  };
  const sweep = async () => {
    retention.reset();
    const results = await sweepGaps({ apply, onGap: options.onGap, gapAfterMs, retention });
    counted(results);
  };
  const scheduleSweep = () => {
    sweepTimer = setTimeout(() => {
      sweeping = sweep()
        .catch((error: unknown) => {
          counters.failed += 1;
          options.onError?.(error, { topic, partition: -1, offset: '-1' });
        })
        .finally(() => {
          if (sweepTimer !== undefined) scheduleSweep();
        });
    }, gapCheckMs);
  };

  const handle = async (position: RecordPosition, value: Buffer | null): Promise<void> => {
    const parsed = parseCloudEvent(value);
    if (!parsed.ok) {
      counters.invalid += 1;
      options.onInvalid?.({ position, reason: parsed.reason });
      retention.handled(position.topic, position.partition, position.offset);
      return;
    }
    let result;
    try {
      result = await applyEvent(apply, parsed.event, position);
    } catch (error) {
      counters.failed += 1;
      options.onError?.(error, position);
      throw error;
    }
    retention.handled(position.topic, position.partition, position.offset);
    if (result.outcome === 'duplicate') counters.duplicates += 1;
    else if (result.outcome === 'applied') counters.applied += 1;
    else counters[result.outcome] += 1;
    counters.applied += result.released.length;
    counters.released += result.released.length;
    if (result.problem !== null) {
      counters.outOfOrder += 1;
      options.onOutOfOrder?.({
        event: parsed.event,
        problem: result.problem,
        policy: apply.policy,
        position,
      });
    }
  };

  return {
    async start() {
      if (consumer) throw new Error('the inbox consumer is already started');
      const started = options.kafka.consumer({
        groupId: options.groupId,
        sessionTimeout: 10_000,
        heartbeatInterval: 3_000,
        maxWaitTimeInMs: 500,
      });
      consumer = started;
      try {
        await withTimeout(started.connect(), kafkaTimeoutMs, 'connecting to Kafka');
        await withTimeout(
          started.subscribe({
            topics: [topic],
            fromBeginning: options.fromBeginning ?? true,
          }),
          kafkaTimeoutMs,
          'subscribing',
        );
        await withTimeout(
          started.run({
            partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
            // The offset is resolved only when this resolves, i.e. after the transaction
            // committed; kafkajs retries a record whose handling threw.
            eachMessage: ({ topic: from, partition, message }) =>
              handle({ topic: from, partition, offset: message.offset }, message.value),
          }),
          kafkaTimeoutMs,
          'starting the consumer',
        );
        scheduleSweep();
      } catch (error) {
        // A failed start leaves nothing behind: start() may be called again.
        consumer = undefined;
        await withTimeout(started.disconnect(), kafkaTimeoutMs, 'disconnecting').catch(
          () => undefined,
        );
        throw error;
      }
    },
    async stop() {
      const running = consumer;
      consumer = undefined;
      if (!running) return;
      clearTimeout(sweepTimer);
      sweepTimer = undefined;
      await sweeping;
      await retention.close().catch(() => undefined);
      // disconnect waits for the event in flight (bounded by timeoutMs) and commits offsets.
      await withTimeout(running.disconnect(), kafkaTimeoutMs + timeoutMs, 'stopping the consumer');
    },
    counters: () => ({ ...counters }),
  };
}
