import {
  Kafka,
  logLevel as KafkaLogLevel,
  Partitioners,
  type Admin,
  type Consumer,
  type KafkaMessage,
  type LogEntry,
  type Producer,
} from 'kafkajs';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { createOutageLog, type OutageLog } from './outage-log.js';

/**
 * The only module that imports kafkajs. kafkajs 2.2.4 is its last release and its maintainers
 * asked for successors, so the rest of the code depends on these few functions, not on kafkajs.
 */
export type { Admin, Consumer, Producer } from 'kafkajs';
export type KafkaClient = Kafka;

/** Overrides for one client's patience; kafkajs' defaults otherwise. */
export interface KafkaClientOptions {
  /** Retries of each request, and of connecting (which requests do again when disconnected). */
  retry?: { retries: number; initialRetryTime: number; maxRetryTime: number };
  /** How long one request waits for its answer (kafkajs' default: 30 s). */
  requestTimeout?: number;
}

export function createKafka(
  config: Pick<Config, 'KAFKA_BROKERS' | 'KAFKA_CLIENT_ID'> &
    Partial<Pick<Config, 'KAFKA_REQUEST_TIMEOUT_MS' | 'OUTAGE_LOG_INTERVAL_MS'>>,
  logger: Logger,
  options: KafkaClientOptions = {},
): KafkaClient {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  const outage = createOutageLog(
    'kafka',
    kafkaLogger,
    config.OUTAGE_LOG_INTERVAL_MS ?? DEFAULT_OUTAGE_LOG_INTERVAL_MS,
  );
  const handlerOutage = createOutageLog(
    'kafka consumer handler',
    kafkaLogger,
    config.OUTAGE_LOG_INTERVAL_MS ?? DEFAULT_OUTAGE_LOG_INTERVAL_MS,
  );
  const kafka = new Kafka({
    clientId: config.KAFKA_CLIENT_ID,
    brokers: config.KAFKA_BROKERS,
    connectionTimeout: 3_000,
    /** A frozen broker fails each request after this long; callers retry or back off. */
    requestTimeout: config.KAFKA_REQUEST_TIMEOUT_MS ?? DEFAULT_REQUEST_TIMEOUT_MS,
    ...options,
    logLevel: KafkaLogLevel.WARN,
    logCreator:
      () =>
      ({ level, log }: LogEntry) => {
        // pino adds its own time; kafkajs' timestamp and logger name are noise.
        const { message, timestamp: _timestamp, logger: _logger, ...extra } = log;
        if (isBenign(message, extra)) {
          kafkaLogger.debug(extra, message);
        } else if (message.startsWith('Error when calling each')) {
          // Our handler failed (the database is down): kafkajs retries the record; one line
          // per interval, not per retry.
          handlerOutage.failed(new Error(describeLog(message, extra)));
        } else if (isConnectivity(message, extra)) {
          // kafkajs logs every reconnect attempt and timed-out request: collapsed into the
          // client's outage log (a few lines per outage), ended by its next answered request.
          outage.failed(new Error(describeLog(message, extra)));
        } else if (level === KafkaLogLevel.ERROR || level === KafkaLogLevel.WARN) {
          // kafkajs logs many retried conditions at ERROR; for us that is a warning, the
          // caller decides what must be acted on.
          kafkaLogger.warn(extra, message);
        } else {
          kafkaLogger.debug(extra, message);
        }
      },
  });
  outages.set(kafka, { kafka: outage, handler: handlerOutage });
  return kafka;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
const DEFAULT_OUTAGE_LOG_INTERVAL_MS = 30_000;

/** Each client's outage log; its producers and consumers end an outage when a request answers. */
const outages = new WeakMap<KafkaClient, { kafka: OutageLog; handler: OutageLog }>();

/** Each consumer's handler outage log (see consume): a handled record ends an outage. */
const handlerOutages = new WeakMap<Consumer, OutageLog>();

/** Ends `kafka`'s outage (if any) whenever `client` gets an answer from a broker. */
function reportAnswers(kafka: KafkaClient, client: Producer | Consumer): void {
  const outage = outages.get(kafka);
  if (!outage) return;
  const answered = () => {
    outage.kafka.succeeded();
  };
  if ('send' in client) client.on(client.events.REQUEST, answered);
  else client.on(client.events.REQUEST, answered);
}

/**
 * Expected on a healthy cluster, retried by kafkajs on its own: another process created the same
 * topic first (ensureTopics then sees it exists), a group coordinator still loading its log on a
 * fresh broker, a rebalance, a controller move. A real failure still reaches the caller.
 */
function isBenign(message: string, extra: Record<string, unknown>): boolean {
  if (message.startsWith(BOUNDED_RETRIES_WARNING)) return true; // see createIdempotentProducer
  if (message === 'Could not create topics') return true;
  // The late answer to a request that already timed out (a broker thawing): it was retried.
  if (message === 'Response without match') return true;
  const error = typeof extra.error === 'string' ? extra.error : '';
  return (
    message.startsWith('Response ') &&
    /Topic creation errors|coordinator is loading|not the correct coordinator|coordinator is not available|group is rebalancing/i.test(
      error,
    )
  );
}

/** A broker that cannot be reached or does not answer, as opposed to an answer we dislike. */
function isConnectivity(message: string, extra: Record<string, unknown>): boolean {
  const error = typeof extra.error === 'string' ? extra.error : '';
  return /connection|connect to|ECONNREFUSED|ECONNRESET|timed out|timeout|NumberOfRetriesExceeded|Restarting the consumer|broker not available|Closed connection/i.test(
    `${message} ${error}`,
  );
}

function describeLog(message: string, extra: Record<string, unknown>): string {
  return typeof extra.error === 'string' ? `${message}: ${extra.error}` : message;
}

/** What kafkajs says when an idempotent producer's retries are bounded (it logs it per producer). */
const BOUNDED_RETRIES_WARNING = 'Limiting retries for the idempotent producer';

/**
 * The idempotent producer: acks from all in-sync replicas, and one request in flight because
 * kafkajs has known ordering issues with concurrent idempotent sends.
 *
 * `retries` bounds how long one send keeps retrying (kafkajs' default for idempotent producers
 * is forever). Bounding it is only safe for a caller that throws the producer away after any
 * failed send: kafkajs rolls its sequence numbers back on failure, so reusing the producer for
 * different records could collide with a batch the broker did append.
 */
export function createIdempotentProducer(
  kafka: KafkaClient,
  options: { retries?: number } = {},
): Producer {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    ...(options.retries === undefined ? {} : { retry: { retries: options.retries } }),
  });
  reportAnswers(kafka, producer);
  return producer;
}

/** One Kafka record: key, value and string headers. */
export interface ProducerRecord {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * Sends records to their topics in one request and resolves once every in-sync replica acked
 * them (acks -1). Rejects when any record was not acknowledged; see `isRecordRejected`.
 */
export async function publish(
  producer: Producer,
  batches: readonly { topic: string; records: readonly ProducerRecord[] }[],
): Promise<void> {
  await producer.sendBatch({
    acks: -1,
    topicMessages: batches.map(({ topic, records }) => ({
      topic,
      messages: records.map(({ key, value, headers }) => ({ key, value, headers })),
    })),
  });
}

/**
 * Broker answers that refuse the records themselves: sending the same bytes again cannot
 * succeed. Every other failure (connection refused or lost, timeouts, leader moves, unknown
 * topic, retries exhausted) is about the cluster, not the record, and is worth retrying as is.
 */
const RECORD_REJECTIONS = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'INVALID_TIMESTAMP',
]);

/**
 * True when the broker refused the records themselves (see RECORD_REJECTIONS). Reads the
 * protocol error's `type` (kafkajs' KafkaJSProtocolError class is not an ESM named export),
 * through the `cause` chain kafkajs builds when it wraps an error.
 */
export function isRecordRejected(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; depth++) {
    const type = (cause as { type?: unknown }).type;
    if (typeof type === 'string' && RECORD_REJECTIONS.has(type)) return true;
    cause = cause.cause;
  }
  return false;
}

/** A real metadata round trip to the cluster, not just an open socket. */
export async function pingKafka(admin: Admin): Promise<void> {
  const cluster = await admin.describeCluster();
  if (cluster.brokers.length === 0) throw new Error('kafka cluster reports no brokers');
}

/**
 * Creates the topics that do not exist yet; existing ones are left as they are. `topicConfig`
 * holds topic-level settings for the new ones (e.g. `max.message.bytes`).
 */
export async function ensureTopics(
  admin: Admin,
  topics: readonly string[],
  numPartitions = 3,
  topicConfig: Readonly<Record<string, string>> = {},
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length === 0) return;
  const configEntries = Object.entries(topicConfig).map(([name, value]) => ({ name, value }));
  // kafkajs answers false (no error) when another process created them first, the usual case
  // when several roles start together; its log line about it is quieted (isBenign).
  await admin.createTopics({
    waitForLeaders: true,
    // Replication factor comes from the broker default (default.replication.factor).
    topics: missing.map((topic) => ({ topic, numPartitions, configEntries })),
  });
}

/** One record as a consumer sees it. */
export interface ConsumedRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

/**
 * Runs `handle` for every record of `topics`, partitions in parallel, each partition in order.
 * kafkajs commits a record's offset only after `handle` resolved, so a record whose handling
 * failed (thrown: e.g. the database is down) is retried and never skipped. A new group starts
 * from the earliest offset: nothing published before it existed is missed.
 */
export async function consume(
  consumer: Consumer,
  topics: readonly string[],
  handle: (record: ConsumedRecord) => Promise<void>,
  partitionsConsumedConcurrently = 3,
): Promise<void> {
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently,
    eachMessage: async ({ topic, partition, message }) => {
      await handle(toConsumedRecord(topic, partition, message));
      handlerOutages.get(consumer)?.succeeded();
    },
  });
}

/** Consecutive records of one partition, in order. */
export interface ConsumedBatch {
  topic: string;
  partition: number;
  records: ConsumedRecord[];
}

export interface BatchOptions {
  /** Partitions whose batches are handled at once (kafkajs' partitionsConsumedConcurrently). */
  partitionsConsumedConcurrently: number;
  /** A fetched batch is handed over in slices of at most this many records. */
  maxRecords: number;
}

/**
 * Runs `handle` for batches of records of `topics`: up to `partitionsConsumedConcurrently`
 * partitions at once, each in order. A slice's offsets are resolved only after `handle`
 * resolved for it (then committed, and the member heartbeats): if `handle` throws, nothing of
 * that slice is resolved and kafkajs delivers it again from its first record. A slice is never
 * started once the consumer stops or the partition was reassigned. A new group starts from the
 * earliest offset.
 */
export async function consumeBatches(
  consumer: Consumer,
  topics: readonly string[],
  handle: (batch: ConsumedBatch) => Promise<void>,
  options: BatchOptions,
): Promise<void> {
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    eachBatchAutoResolve: false,
    // kafkajs' payload functions are closures that do not use `this`.
    eachBatch: async (payload) => {
      const { batch } = payload;
      const { topic, partition } = batch;
      const records = batch.messages.map((message) => toConsumedRecord(topic, partition, message));
      for (let start = 0; start < records.length; start += options.maxRecords) {
        if (!payload.isRunning() || payload.isStale()) return;
        const slice = records.slice(start, start + options.maxRecords);
        const last = slice.at(-1);
        if (!last) return;
        await handle({ topic, partition, records: slice });
        payload.resolveOffset(last.offset);
        await payload.commitOffsetsIfNecessary();
        await payload.heartbeat();
      }
    },
  });
}

function toConsumedRecord(topic: string, partition: number, message: KafkaMessage): ConsumedRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString() ?? null,
    value: message.value,
    headers: Object.fromEntries(
      Object.entries(message.headers ?? {}).flatMap(([name, header]) =>
        header === undefined ? [] : [[name, header.toString()]],
      ),
    ),
  };
}

/**
 * A consumer in `groupId`. A fetch returns as soon as records exist; `maxWaitTimeInMs` only
 * bounds an idle fetch, and a disconnect (shutdown, rebalance) waits for the fetch in flight,
 * so half a second keeps shutdowns fast at the cost of two idle fetches per second.
 * A crashed member's partitions move to the others after the session timeout: 10 s instead
 * of kafkajs' 30 s (heartbeats every 3 s leave room for two missed ones and a GC pause).
 */
export function createConsumer(
  kafka: KafkaClient,
  groupId: string,
  maxWaitTimeInMs = 500,
): Consumer {
  const consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs,
    sessionTimeout: 10_000,
    heartbeatInterval: 3_000,
  });
  reportAnswers(kafka, consumer);
  const handler = outages.get(kafka)?.handler;
  if (handler) handlerOutages.set(consumer, handler);
  return consumer;
}
