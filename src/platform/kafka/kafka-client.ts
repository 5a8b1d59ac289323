// First: it replaces a kafkajs module before kafkajs loads (kafkajs-read-committed.ts).
import { assertReadCommittedFilter } from './kafkajs-read-committed.js';
import {
  Kafka,
  logLevel as KafkaLogLevel,
  type Consumer,
  type LogEntry,
  type Producer,
} from 'kafkajs';
import type { Config } from '../config/config.js';
import type { Logger } from '../telemetry/logger.js';
import { createOutageLog, type OutageLog } from '../resilience/outage-log.js';
import { kafkaSecurity, type KafkaSecurityConfig } from './kafka-security.js';

// The Kafka client: its settings, and how kafkajs' log lines become ours (an outage costs a
// few lines). Part of the Kafka boundary (kafka.ts).

export type KafkaClient = Kafka;

/** Overrides for one client's patience; kafkajs' defaults otherwise. */
export interface KafkaClientOptions {
  /** Retries of each request, and of connecting (which requests do again when disconnected). */
  retry?: { retries: number; initialRetryTime: number; maxRetryTime: number };
  /** How long one request waits for its answer (kafkajs' default: 30 s). */
  requestTimeout?: number;
}

/** What a client is built from: the brokers, its id, and optionally its timeouts and security. */
export type KafkaClientConfig = Pick<Config, 'KAFKA_BROKERS' | 'KAFKA_CLIENT_ID'> &
  Partial<Pick<Config, 'KAFKA_REQUEST_TIMEOUT_MS' | 'OUTAGE_LOG_INTERVAL_MS'>> &
  KafkaSecurityConfig;

export function createKafka(
  config: KafkaClientConfig,
  logger: Logger,
  options: KafkaClientOptions = {},
): KafkaClient {
  assertReadCommittedFilter();
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
    // TLS and the SASL login, when configured (DESIGN 122).
    ...kafkaSecurity(config),
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

/** Gives `consumer` its client's handler outage log (createConsumer). */
export function shareHandlerOutage(kafka: KafkaClient, consumer: Consumer): void {
  const handler = outages.get(kafka)?.handler;
  if (handler) handlerOutages.set(consumer, handler);
}

/** The handler outage log of `consumer`, if its client has one. */
export function handlerOutageOf(consumer: Consumer): OutageLog | undefined {
  return handlerOutages.get(consumer);
}

/** Ends `kafka`'s outage (if any) whenever `client` gets an answer from a broker. */
export function reportAnswers(kafka: KafkaClient, client: Producer | Consumer): void {
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
