import { z } from 'zod';
import { brokerList, integer, topicName, urlWithProtocol } from './config-fields.js';

/** Process basics and how to reach Postgres, Redis and Kafka (part of configSchema). */
export const connectionSettings = {
  NODE_ENV: z
    .enum(['development', 'test', 'production'])
    .default('development')
    .describe(
      'Environment name for libraries that read it (Express); the service itself ignores it.',
    ),
  HOST: z.string().min(1).default('127.0.0.1').describe('Address the HTTP API listens on.'),
  PORT: integer(0, 65535).default(3000).describe('Port of the HTTP API (0 picks a free port).'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Lowest pino level written.'),
  /** `pretty` needs the pino-pretty dev dependency; production logs stay JSON. */
  LOG_FORMAT: z
    .enum(['json', 'pretty'])
    .default('json')
    .describe('`json` for machines; `pretty` for people (`npm run up` sets it on a terminal).'),
  DATABASE_URL: urlWithProtocol(
    ['postgres:', 'postgresql:'],
    'postgres://user:password@host:5432/db',
  )
    .default('postgres://payments:payments@127.0.0.1:5432/payments')
    .describe(
      "Postgres connection URL of the process's own login (never echoed in errors: it may carry a password); or `DATABASE_URL_FILE` naming a file that holds it.",
    ),
  /**
   * The login that runs migrations and owns the tables; `npm run migrate` uses it (DATABASE_URL
   * when unset). Processes log in with DATABASE_URL, their own least-privileged role.
   */
  MIGRATION_DATABASE_URL: urlWithProtocol(
    ['postgres:', 'postgresql:'],
    'postgres://owner:password@host:5432/db',
  )
    .optional()
    .describe(
      'Postgres URL of the table owner that `npm run migrate` logs in as (DATABASE_URL when unset).',
    ),
  /**
   * Processes refuse to start when DATABASE_URL logs in as a superuser or as the owner of the
   * tables (it could drop them); `true` allows it, for the all-in-one dev process and tests.
   */
  DB_ALLOW_PRIVILEGED_LOGIN: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((value) => value === 'true')
    .default(false)
    .describe(
      '`true` lets a process start with a superuser or table-owner DATABASE_URL (dev, tests); refused otherwise.',
    ),
  /** Two cores serve about this many concurrent transactions usefully; more connections only queue. */
  DATABASE_POOL_MAX: integer(1, 500).default(20).describe('Postgres connections per process.'),
  /** A statement that runs longer than this is a bug or a lock pile-up; fail it rather than hang. */
  DATABASE_STATEMENT_TIMEOUT_MS: integer(100, 600_000)
    .default(10_000)
    .describe('Longest a single SQL statement may run before Postgres cancels it.'),
  /** A pool checkout (new connection or a free one) waits this long, then the request is 503. */
  DATABASE_CONNECT_TIMEOUT_MS: integer(50, 600_000)
    .default(3_000)
    .describe('Longest wait for a Postgres connection from the pool (then 503 + Retry-After).'),
  /**
   * Client-side bound of one query: a database that accepts the connection and never answers
   * (frozen, partitioned) fails the query after this long; statement_timeout cannot fire then.
   */
  DATABASE_QUERY_TIMEOUT_MS: integer(50, 600_000)
    .default(11_000)
    .describe(
      'Longest the client waits for a query answer (a frozen Postgres); keep it >= the statement timeout.',
    ),
  /**
   * `npm run migrate`'s client-side bound of one statement: long enough for a migration that
   * builds an index, or that waits for another migrator's advisory lock; a frozen Postgres
   * still fails the command instead of hanging it.
   */
  MIGRATION_QUERY_TIMEOUT_MS: integer(1_000, 86_400_000)
    .default(600_000)
    .describe(
      "Longest `npm run migrate` waits for one statement (an index build, another migrator's lock, a frozen Postgres).",
    ),
  REDIS_URL: urlWithProtocol(['redis:', 'rediss:'], 'redis://host:6379')
    .default('redis://127.0.0.1:6379')
    .describe(
      'Redis connection URL of the API (response cache, idempotency locks, rate limits), as its own Redis user (`payments_api`); other roles ignore it. Or `REDIS_URL_FILE` naming a file that holds it.',
    ),
  /**
   * Redis answers in well under a millisecond; a command still unanswered after this long means
   * a frozen or partitioned Redis, and the request goes on without it (REDIS_FAILURE_MODE).
   */
  REDIS_COMMAND_TIMEOUT_MS: integer(10, 60_000)
    .default(200)
    .describe('Longest a Redis command may take before it counts as a Redis failure.'),
  /** After a failure Redis is skipped this long, so an outage costs one timeout, not one per request. */
  REDIS_BREAKER_COOLDOWN_MS: integer(0, 600_000)
    .default(1_000)
    .describe(
      'After a Redis failure, how long requests skip Redis before trying it again (0: never skip).',
    ),
  /** Every key this service writes starts with this, so several deployments can share a Redis. */
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]*$/, { message: 'may hold only letters, digits, ":", "_" and "-"' })
    .default('payments:')
    .describe('Prefix of every Redis key the service writes.'),
  KAFKA_BROKERS: brokerList
    .default(['127.0.0.1:9092'])
    .describe('Comma-separated `host:port` list of Kafka bootstrap brokers.'),
  KAFKA_CLIENT_ID: z
    .string()
    .min(1)
    .default('payments-service')
    .describe('Kafka client id, shown in broker logs and metrics.'),
  KAFKA_TOPIC_PAYMENTS: topicName
    .default('payments.events')
    .describe('Topic of payment lifecycle events (the relay writes, settlement reads).'),
  KAFKA_TOPIC_DLQ: topicName
    .default('payments.settlement.dlq')
    .describe('Topic of settlement dead letters.'),
  /**
   * The dead-letter topic's `retention.ms`, set when the service creates it (DESIGN 111): the
   * broker's default (7 days) dropped letters still to be replayed. Dead jobs' letters are also
   * kept in `dead_letters` while the job is dead; this bounds how long the topic shows them.
   */
  KAFKA_TOPIC_DLQ_RETENTION_SECONDS: integer(3_600, 3_650 * 86_400)
    .default(30 * 86_400)
    .describe(
      'Retention of the dead-letter topic (retention.ms), when the service creates it; an existing topic is not altered.',
    ),
  /** Partitions bound the consumer's parallelism: 12 lets one slow partition hold 1/12 of it. */
  KAFKA_TOPIC_PARTITIONS: integer(1, 1_000)
    .default(12)
    .describe('Partitions of the payments and DLQ topics, when the service creates them.'),
  KAFKA_CONSUMER_GROUP: z
    .string()
    .min(1)
    .default('payments-settlement')
    .describe('Consumer group of the settlement role.'),
};
