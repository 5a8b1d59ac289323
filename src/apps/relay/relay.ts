import { toKafkaRecord } from '../../outbox/cloud-event.js';
import { outboxMetrics } from '../../outbox/outbox-metrics.js';
import {
  claimEvents,
  markPublished,
  purgePublished,
  recordFailedAttempt,
  releaseEvents,
  type ClaimedEvent,
} from '../../outbox/outbox-repository.js';
import type { Config } from '../../platform/config.js';
import type { Queryable } from '../../platform/db.js';
import {
  createIdempotentProducer,
  createKafka,
  isRecordRejected,
  publish,
  type KafkaClient,
  type KafkaClientOptions,
  type Producer,
} from '../../platform/kafka.js';
import type { Logger } from '../../platform/logger.js';

/**
 * The relay's Kafka client gives up quickly: 2 retries 200-400 ms apart, 10 s per request.
 * A send, connect included, then fails within a second when Kafka is down, and within ~40 s in
 * the worst case (a broker that accepts connections and never answers), below RELAY_LEASE_MS.
 * Waiting out an outage is the relay loop's job (its backoff), not kafkajs' (whose default for an
 * idempotent producer is to retry forever inside one send).
 */
const RELAY_KAFKA_OPTIONS = {
  retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 2_000 },
  requestTimeout: 10_000,
} satisfies KafkaClientOptions;

/** The Kafka client a relay should be given (see RELAY_KAFKA_OPTIONS). */
export function createRelayKafka(
  config: Pick<Config, 'KAFKA_BROKERS' | 'KAFKA_CLIENT_ID'>,
  logger: Logger,
): KafkaClient {
  return createKafka(config, logger, RELAY_KAFKA_OPTIONS);
}
/** First pause after an iteration failed on Kafka or Postgres: a blip heals within it. */
const FIRST_BACKOFF_MS = 250;
/** A dependency back after an outage is used again within this long. */
const MAX_BACKOFF_MS = 5_000;
/** Rows per DELETE: each statement holds its row locks for milliseconds, not seconds. */
const PURGE_BATCH_SIZE = 1_000;
/** At 500 rows/s retention removes ~5,000 rows per round: a few statements every 10 s. */
const PURGE_INTERVAL_MS = 10_000;
/** Bounds one round, so a first purge of a large table does not hold publishing back. */
const PURGE_MAX_BATCHES = 20;

/** A refused row is retried after 1 s, 2 s, 4 s ... (capped at a minute) until it is parked. */
const defaultRetryDelayMs = (attempts: number): number =>
  Math.min(1_000 * 2 ** Math.max(0, attempts - 1), 60_000);

export type RelayConfig = Pick<
  Config,
  | 'RELAY_BATCH_SIZE'
  | 'RELAY_POLL_INTERVAL_MS'
  | 'RELAY_LEASE_MS'
  | 'RELAY_MAX_ATTEMPTS'
  | 'OUTBOX_RETENTION_SECONDS'
>;

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
}

export interface RunOnceResult {
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

export interface Relay {
  /** Claims one batch, publishes it, marks it. Not reentrant: one round at a time. */
  runOnce: () => Promise<RunOnceResult>;
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

interface SendOutcome {
  acked: ClaimedEvent[];
  rejected: { event: ClaimedEvent; error: unknown }[];
  /** Not sent because Kafka is unreachable. */
  unsent: ClaimedEvent[];
  unavailable?: unknown;
  /** When the send finished (Date.now()): the end of the lag measurement. */
  ackedAt: number;
}

export function createRelay(deps: RelayDeps): Relay {
  const { db, kafka, logger, config } = deps;
  const retryDelayMs = deps.retryDelayMs ?? defaultRetryDelayMs;
  const random = deps.random ?? Math.random;

  let producer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;

  // The loop's waiting: a wake-up cuts an idle wait short, never a backoff; stop cuts both.
  let stopped = false;
  /** A function, not the variable: the loop must see the value stop() sets while it awaits. */
  const isStopped = (): boolean => stopped;
  let woken = false;
  let endIdleWait: (() => void) | undefined;
  let endAnyWait: (() => void) | undefined;
  let loop: Promise<void> | undefined;

  /** The current producer, connecting a new one when the last was discarded. */
  function connectedProducer(): Promise<Producer> {
    if (producer) return Promise.resolve(producer);
    connecting ??= (async () => {
      const fresh = createIdempotentProducer(kafka, {
        retries: RELAY_KAFKA_OPTIONS.retry.retries,
      });
      try {
        await fresh.connect();
      } catch (error) {
        await fresh.disconnect().catch(() => undefined);
        throw error;
      }
      producer = fresh;
      return fresh;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  /**
   * After any failed send the producer is replaced (new producer id): kafkajs rolls back its
   * sequence numbers on failure, and a partition that did append part of the request would then
   * see different records under the same sequence, which the broker may drop as duplicates.
   * A new producer id costs one round trip and makes that impossible.
   */
  function discardProducer(): void {
    const old = producer;
    producer = undefined;
    void old?.disconnect().catch(() => undefined);
  }

  async function sendEvents(events: readonly ClaimedEvent[]): Promise<void> {
    const byTopic = new Map<string, ReturnType<typeof toKafkaRecord>[]>();
    for (const event of events) {
      const records = byTopic.get(event.topic) ?? [];
      records.push(toKafkaRecord(event));
      byTopic.set(event.topic, records);
    }
    const batches = [...byTopic].map(([topic, records]) => ({ topic, records }));
    await publish(await connectedProducer(), batches);
  }

  /**
   * Sends the batch; when the broker refuses a record, halves the batch until the refused rows
   * are isolated, so one poison row costs a few extra sends and never holds back the others.
   * Records of a refused request may already sit on some partitions; sending them again makes
   * duplicates with the same event id, which consumers drop.
   */
  async function sendSplitting(events: ClaimedEvent[], outcome: SendOutcome): Promise<boolean> {
    try {
      await sendEvents(events);
      outcome.acked.push(...events);
      return true;
    } catch (error) {
      discardProducer();
      const [only] = events;
      if (!isRecordRejected(error)) {
        outcome.unsent.push(...events);
        outcome.unavailable = error;
        return false;
      }
      if (events.length === 1 && only) {
        outcome.rejected.push({ event: only, error });
        return true;
      }
      const half = Math.ceil(events.length / 2);
      if (!(await sendSplitting(events.slice(0, half), outcome))) {
        outcome.unsent.push(...events.slice(half));
        return false;
      }
      return sendSplitting(events.slice(half), outcome);
    }
  }

  const claimBatch = () => claimEvents(db, config.RELAY_BATCH_SIZE, config.RELAY_LEASE_MS);

  /** A fresh result for `claimed` rows. */
  const resultFor = (claimed: number): RunOnceResult => ({
    claimed,
    published: 0,
    rejected: 0,
    parked: 0,
    kafkaUnavailable: false,
  });

  /** Claims a batch, unless Kafka is away: leases would only make other relays wait. */
  async function claimIfKafka(): Promise<ClaimedEvent[] | undefined> {
    try {
      await connectedProducer();
    } catch (error) {
      logger.debug({ err: error }, 'kafka unreachable');
      return undefined;
    }
    return claimBatch();
  }

  /** Publishes claimed rows (see sendSplitting); never throws. */
  async function sendClaimed(events: ClaimedEvent[]): Promise<SendOutcome> {
    const outcome: SendOutcome = { acked: [], rejected: [], unsent: [], ackedAt: 0 };
    if (events.length > 0) await sendSplitting(events, outcome);
    outcome.ackedAt = Date.now();
    return outcome;
  }

  /** Marks acked rows published, records refusals, gives back what Kafka did not take. */
  async function settleOutcome(claimed: number, outcome: SendOutcome): Promise<RunOnceResult> {
    const result = resultFor(claimed);
    const { ackedAt } = outcome;
    if (outcome.acked.length > 0) {
      await deps.afterPublish?.(outcome.acked);
      await markPublished(
        db,
        outcome.acked.map((event) => event.id),
      );
      result.published = outcome.acked.length;
      outboxMetrics.published.inc(outcome.acked.length);
      for (const event of outcome.acked) {
        outboxMetrics.lag.observe(Math.max(0, ackedAt - event.createdAt.getTime()) / 1_000);
      }
    }

    for (const { event, error } of outcome.rejected) {
      const attempts = event.attempts + 1;
      const message = error instanceof Error ? error.message : String(error);
      const { parked } = await recordFailedAttempt(
        db,
        event.id,
        message,
        config.RELAY_MAX_ATTEMPTS,
        retryDelayMs(attempts),
      );
      result.rejected++;
      outboxMetrics.failed.inc({ reason: 'rejected' });
      const context = { eventId: event.eventId, paymentId: event.aggregateId, attempts };
      if (parked) {
        result.parked++;
        outboxMetrics.parked.inc();
        logger.error({ ...context, err: error }, 'outbox event parked: kafka refuses it');
      } else {
        logger.warn({ ...context, err: error }, 'kafka refused an outbox event; will retry');
      }
    }

    if (outcome.unsent.length > 0) {
      const reason = outcome.unavailable instanceof Error ? outcome.unavailable.message : 'kafka';
      await releaseEvents(
        db,
        outcome.unsent.map((event) => event.id),
        `kafka unavailable: ${reason}`,
      );
      result.kafkaUnavailable = true;
      outboxMetrics.failed.inc({ reason: 'kafka_unavailable' }, outcome.unsent.length);
      logger.debug({ err: outcome.unavailable }, 'kafka unavailable during send');
    }
    return result;
  }

  async function runOnce(): Promise<RunOnceResult> {
    const events = await claimIfKafka();
    if (!events) return { ...resultFor(0), kafkaUnavailable: true };
    return settleOutcome(events.length, await sendClaimed(events));
  }

  /**
   * Rounds back to back until a claim comes back empty, with Postgres and Kafka working at the
   * same time: the next batch is claimed while the current one is sent, and the current one is
   * marked while the next one is sent. The next batch cannot hold a later event of a payment in
   * the current one: that event stays behind its predecessor until the predecessor's mark
   * commits. Returns the rows claimed in all (handing back after PURGE_INTERVAL_MS at most).
   */
  async function drain(): Promise<{ claimed: number; kafkaUnavailable: boolean }> {
    const started = performance.now();
    const first = await claimIfKafka();
    if (!first) return { claimed: 0, kafkaUnavailable: true };
    let batch = first;
    let claimed = 0;
    let marking: Promise<unknown> = Promise.resolve();
    let prefetched: Promise<ClaimedEvent[] | Error> = Promise.resolve([]);
    try {
      while (batch.length > 0) {
        claimed += batch.length;
        if (batch.length === config.RELAY_BATCH_SIZE) deps.onBacklog?.();
        // Under endless load, hand back to the loop now and then, so the purge still runs.
        const enough = isStopped() || performance.now() - started >= PURGE_INTERVAL_MS;
        prefetched = settle(enough ? Promise.resolve([]) : claimBatch());
        const outcome = await sendClaimed(batch);
        await marking; // one batch being marked at a time
        marking = settleOutcome(batch.length, outcome);
        // Awaited on the next turn or below; until then a rejection must not count as unhandled.
        marking.catch(() => undefined);
        if (outcome.unsent.length > 0) {
          await marking;
          return { claimed, kafkaUnavailable: true };
        }
        const following = await prefetched;
        prefetched = Promise.resolve([]);
        if (following instanceof Error) throw following;
        batch = following;
      }
      await marking;
      return { claimed, kafkaUnavailable: false };
    } finally {
      // Leaving early: a prefetched batch that will not be sent now goes back at once.
      await giveBack(await prefetched);
    }
  }

  /** Releases a prefetched batch that will not be sent now (best effort: leases expire anyway). */
  async function giveBack(batch: ClaimedEvent[] | Error): Promise<void> {
    if (batch instanceof Error || batch.length === 0) return;
    await releaseEvents(
      db,
      batch.map((event) => event.id),
      'released: the batch before it failed',
    ).catch(() => undefined);
  }

  function purgeOnce(limit = PURGE_BATCH_SIZE): Promise<number> {
    return purgePublished(db, config.OUTBOX_RETENTION_SECONDS, limit);
  }

  async function purgeRound(): Promise<void> {
    let deleted = 0;
    for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
      const count = await purgeOnce();
      deleted += count;
      if (count < PURGE_BATCH_SIZE) break;
    }
    if (deleted > 0) logger.debug({ deleted }, 'purged published outbox rows');
  }

  function wake(): void {
    woken = true;
    endIdleWait?.();
  }

  function pause(ms: number, idle: boolean): Promise<void> {
    if (isStopped() || (idle && woken)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        endIdleWait = undefined;
        endAnyWait = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      endAnyWait = done;
      if (idle) endIdleWait = done;
    });
  }

  function backoffMs(failures: number): number {
    const capped = Math.min(FIRST_BACKOFF_MS * 2 ** (failures - 1), MAX_BACKOFF_MS);
    // Jitter, so relays that failed together do not all come back in the same millisecond.
    return capped / 2 + (capped / 2) * random();
  }

  async function loopUntilStopped(): Promise<void> {
    let failures = 0;
    let lastPurge = Number.NEGATIVE_INFINITY;
    while (!isStopped()) {
      // Cleared before the round: a notification arriving during it triggers another round.
      woken = false;
      let drained: { claimed: number; kafkaUnavailable: boolean } | undefined;
      try {
        drained = await drain();
        if (performance.now() - lastPurge >= PURGE_INTERVAL_MS) {
          lastPurge = performance.now();
          await purgeRound();
        }
      } catch (error) {
        if (failures === 0) logger.warn({ err: error }, 'relay round failed; backing off');
      }
      if (!drained || drained.kafkaUnavailable) {
        if (drained && failures === 0) logger.warn('kafka unreachable; relay backing off');
        if (drained) outboxMetrics.kafkaUnavailable.inc();
        failures++;
        await pause(backoffMs(failures), false);
        continue;
      }
      if (failures > 0) logger.info({ failures }, 'relay recovered');
      failures = 0;
      // Publishing may have unblocked the next events of those payments: look again at once.
      if (drained.claimed > 0) continue;
      await pause(config.RELAY_POLL_INTERVAL_MS, true);
    }
  }

  return {
    runOnce,
    purgeOnce,
    connect: async () => {
      await connectedProducer();
    },
    wake,
    run: () => (loop ??= loopUntilStopped()),
    stop: async () => {
      stopped = true;
      endAnyWait?.();
      await loop;
      await connecting?.catch(() => undefined);
      const last = producer;
      producer = undefined;
      await last?.disconnect();
    },
  };
}

/** The promise's value, or its rejection as a value: for work started before it is awaited. */
function settle<T>(promise: Promise<T>): Promise<T | Error> {
  return promise.catch((error: unknown) =>
    error instanceof Error ? error : new Error(String(error)),
  );
}

/**
 * `count` relays in one process, sharing the pool, each with its own producer: while one waits
 * on Postgres another publishes (Node has one core; their awaits overlap). They coordinate through
 * the database exactly as relays in separate processes do. A notification wakes the first only;
 * the others join when a claim comes back full, i.e. when there is a backlog, so an idle or
 * lightly loaded process does not make every worker claim for every insert. `runOnce` and
 * `purgeOnce` use the first.
 */
export function createRelayWorkers(deps: RelayDeps, count: number): Relay {
  const workers: Relay[] = [];
  const wakeAll = () => {
    for (const worker of workers) worker.wake();
  };
  for (let index = 0; index < Math.max(1, count); index++) {
    workers.push(createRelay({ ...deps, onBacklog: wakeAll }));
  }
  const [first] = workers;
  if (!first) throw new Error('no relay worker');
  return {
    runOnce: first.runOnce,
    purgeOnce: first.purgeOnce,
    connect: async () => {
      await Promise.all(workers.map((worker) => worker.connect()));
    },
    wake: first.wake,
    run: async () => {
      await Promise.all(workers.map((worker) => worker.run()));
    },
    stop: async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
    },
  };
}
