import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from './config-error.js';

export { ConfigError };

/**
 * The whole runtime configuration of every process role, read from the environment once at
 * boot. Defaults point at the local native stack (`scripts/stack.sh`), so `npm run up` needs no
 * settings; anything invalid stops the process with one line naming the variable.
 */

const urlWithProtocol = (protocols: readonly string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        const url = new URL(value);
        return protocols.includes(url.protocol) && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { message: `must be an integer between ${min} and ${max}` })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `must be at least ${min}` })
        .max(max, { message: `must be at most ${max}` }),
    );

const brokerList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((broker) => broker.trim())
      .filter((broker) => broker !== ''),
  )
  .pipe(
    z
      .array(
        z.string().regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, {
          message: 'each broker must be host:port',
        }),
      )
      .min(1, { message: 'must list at least one host:port' }),
  );

const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, {
  message: 'must be a Kafka topic name ([A-Za-z0-9._-], 1-249 chars)',
});

export const configSchema = z.object({
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
  REDIS_URL: urlWithProtocol(['redis:', 'rediss:'], 'redis://host:6379')
    .default('redis://127.0.0.1:6379')
    .describe(
      'Redis connection URL (response cache, idempotency locks, rate limits); or `REDIS_URL_FILE` naming a file that holds it.',
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
  /** Partitions bound the consumer's parallelism: 12 lets one slow partition hold 1/12 of it. */
  KAFKA_TOPIC_PARTITIONS: integer(1, 1_000)
    .default(12)
    .describe('Partitions of the payments and DLQ topics, when the service creates them.'),
  KAFKA_CONSUMER_GROUP: z
    .string()
    .min(1)
    .default('payments-settlement')
    .describe('Consumer group of the settlement role.'),
  /** Clients retry for hours after an outage; a day covers that and bounds the table's size. */
  IDEMPOTENCY_KEY_TTL_SECONDS: integer(1, 30 * 86_400)
    .default(86_400)
    .describe('How long an Idempotency-Key is remembered (database record and cached response).'),
  /**
   * Longer than a slow request's database work (p99 is milliseconds), short enough that a
   * crashed holder frees the key quickly. Expiry is safe: the database constraint is the guard.
   */
  IDEMPOTENCY_LOCK_TTL_MS: integer(50, 600_000)
    .default(5_000)
    .describe('TTL of the Redis lock held while a request with a key is in flight.'),
  /** `reject`: 409 at once while the first request is in flight; `wait`: poll, then replay. */
  IDEMPOTENCY_IN_FLIGHT: z
    .enum(['reject', 'wait'])
    .default('reject')
    .describe(
      'What a duplicate of an in-flight request gets: `reject` (409 at once) or `wait` (poll, then replay or 409).',
    ),
  /** Bound of the `wait` mode: well under common client timeouts (10-30 s). */
  IDEMPOTENCY_WAIT_MS: integer(0, 60_000)
    .default(2_000)
    .describe('Longest a duplicate waits for the first request in `wait` mode.'),
  /** The first request almost always finishes within a second; retrying sooner is wasted. */
  IDEMPOTENCY_RETRY_AFTER_SECONDS: integer(1, 3_600)
    .default(1)
    .describe('`Retry-After` of a 409 for a key still in flight.'),
  /** Expired keys are few per second at our rates; once a minute keeps the table near its TTL. */
  IDEMPOTENCY_REAPER_INTERVAL_MS: integer(100, 3_600_000)
    .default(60_000)
    .describe('How often the API role deletes expired idempotency records.'),
  /** Small enough that one DELETE holds its locks for milliseconds, not seconds. */
  IDEMPOTENCY_REAPER_BATCH: integer(1, 100_000)
    .default(1_000)
    .describe('Expired idempotency records deleted per statement.'),
  /**
   * `open`: when Redis is down, keep serving through the database path (correct, slower).
   * `closed`: answer 503 instead, for operators who would rather shed load than lose the lock.
   */
  REDIS_FAILURE_MODE: z
    .enum(['open', 'closed'])
    .default('open')
    .describe('When Redis is down: `open` serves through the database, `closed` answers 503.'),
  /** A payment request is well under 2 KiB; 16 KiB leaves room for metadata and stops abuse. */
  HTTP_BODY_LIMIT_BYTES: integer(1_024, 1_048_576)
    .default(16_384)
    .describe('Largest accepted request body (larger: 413).'),
  /** Under common client and load-balancer timeouts (10-30 s): the client hears 503, not silence. */
  REQUEST_DEADLINE_MS: integer(100, 600_000)
    .default(5_000)
    .describe(
      'Longest an HTTP request may take; past it the client gets 503 + Retry-After (the work may still commit).',
    ),
  /**
   * Load shedding: at 1,000 payments/s a request is in flight ~15 ms, so ~15 are; 1,000 leaves
   * room for bursts and storms (k6 refund storm: 900) while a flood behind a slow database
   * cannot fill the capped heap (DESIGN 63).
   */
  HTTP_MAX_IN_FLIGHT: integer(1, 1_000_000)
    .default(1_000)
    .describe(
      'Requests one API process serves at once; beyond it 503 + Retry-After at once (health probes exempt).',
    ),
  /** A client that has not sent its headers by then is cut off (Node answers 408). */
  HTTP_HEADERS_TIMEOUT_MS: integer(100, 600_000)
    .default(10_000)
    .describe('Longest a client may take to send the request headers (then 408).'),
  /** Headers and body; a payment body is 2 KiB, so a slow sender is cut off, not read for minutes. */
  HTTP_REQUEST_TIMEOUT_MS: integer(100, 600_000)
    .default(15_000)
    .describe(
      'Longest a client may take to send the whole request, body included (then 408); >= the headers timeout.',
    ),
  /**
   * Bound of every rate-limit call to Redis: a frozen Redis must not stall requests (the
   * gray-failure bound, 100-250 ms); past it the process limits on its own until Redis answers.
   */
  RATE_LIMIT_REDIS_TIMEOUT_MS: integer(10, 5_000)
    .default(150)
    .describe(
      'Bound of each rate-limit call to Redis; past it the process limits from its own memory.',
    ),
  /**
   * Failed authentications per client address (checked before any lookup): one a second
   * sustained makes guessing keys pointless, and...
   */
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: integer(1, 1_000_000)
    .default(60)
    .describe('Failed authentications allowed per client address per minute (over it: 429).'),
  /** ...a burst of 20 forgives a misconfigured client's first retries. */
  RATE_LIMIT_UNAUTHENTICATED_BURST: integer(1, 1_000_000)
    .default(20)
    .describe('Failed authentications a client address may make in a burst.'),
  /** A revoked API key stops working within this long; keeps Postgres off the replay path. */
  AUTH_CACHE_TTL_MS: integer(0, 3_600_000)
    .default(30_000)
    .describe(
      'How long an API key lookup is cached in memory (a revoked key works this long); 0 disables.',
    ),
  /**
   * An unknown key is answered from memory for this long: a client repeating a wrong key costs
   * one lookup per interval. Keys are random, so no key can be created during its negative entry.
   */
  AUTH_NEGATIVE_CACHE_TTL_MS: integer(0, 3_600_000)
    .default(10_000)
    .describe('How long an unknown API key is answered from memory (401); 0 disables.'),
  /** When Postgres is unavailable, clients are told to come back after this many seconds. */
  UNAVAILABLE_RETRY_AFTER_SECONDS: integer(1, 3_600)
    .default(2)
    .describe('`Retry-After` of a 503 when Postgres (or Redis in `closed` mode) is unavailable.'),
  /** One warning per dependency per interval while an outage lasts, one line when it ends. */
  OUTAGE_LOG_INTERVAL_MS: integer(100, 3_600_000)
    .default(30_000)
    .describe('While a dependency is down, how often its outage is logged again (warn).'),
  /** Bounds a frozen broker: each Kafka request fails after this long and is retried/backed off. */
  KAFKA_REQUEST_TIMEOUT_MS: integer(100, 600_000)
    .default(10_000)
    .describe('Longest one Kafka request waits for its answer (relay, settlement, admin).'),
  /** Brief section 7: five attempts, then the dead-letter queue. */
  SETTLEMENT_MAX_ATTEMPTS: integer(1, 100)
    .default(5)
    .describe('Acquirer attempts per payment before its event is dead-lettered.'),
  /** First retry after up to this long (full jitter); doubles per attempt up to the cap. */
  SETTLEMENT_BACKOFF_BASE_MS: integer(1, 600_000)
    .default(200)
    .describe('Base of the settlement retry backoff (full jitter, doubling per attempt).'),
  /** No retry waits longer: a recovered acquirer is used within this long. */
  SETTLEMENT_BACKOFF_CAP_MS: integer(1, 3_600_000)
    .default(30_000)
    .describe('Longest delay between two settlement attempts.'),
  /** A claimed job is another worker's after this long; well above ACQUIRER_TIMEOUT_MS. */
  SETTLEMENT_LEASE_MS: integer(100, 3_600_000)
    .default(30_000)
    .describe(
      'How long a claimed settlement job belongs to its worker before another may take it.',
    ),
  /**
   * Jobs in flight per settlement process. A slot is held through the claim, the acquirer call
   * and the grouped completion, so one process settles at most about this many per (acquirer
   * latency + completion time): 16 capped it near 210/s on the 2-core bench machine even with a
   * zero-latency acquirer (DESIGN 80).
   */
  SETTLEMENT_CONCURRENCY: integer(1, 1_000)
    .default(64)
    .describe('Acquirer calls in flight per settlement process.'),
  /** Batches of this many partitions are recorded at once; each is one short transaction. */
  SETTLEMENT_CONSUMER_PARTITIONS: integer(1, 1_000)
    .default(6)
    .describe('Partitions whose batches the settlement consumer records at once.'),
  /** A few hundred rows per statement amortise the commit; more only lengthens the transaction. */
  SETTLEMENT_INTAKE_BATCH_MAX: integer(1, 10_000)
    .default(500)
    .describe('Most records the settlement consumer records in one transaction.'),
  /** Fallback poll for due retries; new work wakes the worker at once. */
  SETTLEMENT_POLL_MS: integer(10, 60_000)
    .default(500)
    .describe('Fallback poll of the settlement worker for due retries.'),
  /** An acquirer that has not answered by then is treated as a transient failure. */
  ACQUIRER_TIMEOUT_MS: integer(10, 120_000)
    .default(2_000)
    .describe('Timeout of one acquirer call (then a transient failure).'),
  /** Simulator only: latency added to every call, for load tests. */
  ACQUIRER_SIM_LATENCY_MS: integer(0, 60_000)
    .default(0)
    .describe('Simulator only: latency added to every call.'),
  /** Simulator only: probability of a random transient failure, for load tests. */
  ACQUIRER_SIM_FAILURE_RATE: z
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, { message: 'must be a number between 0 and 1' })
    .transform(Number)
    .default(0)
    .describe('Simulator only: probability (0-1) of a random transient failure.'),
  /** A readiness probe must answer before the orchestrator's own timeout (typically 1-5 s). */
  READINESS_TIMEOUT_MS: integer(100, 60_000)
    .default(2_000)
    .describe('Bound of each dependency check of `/readyz`.'),
  /** Long enough to finish in-flight requests, shorter than a typical 30 s SIGKILL grace period. */
  SHUTDOWN_TIMEOUT_MS: integer(100, 120_000)
    .default(15_000)
    .describe('Bound of a graceful shutdown after SIGTERM/SIGINT.'),
  /**
   * The internal listener of every process (API included): /metrics, the detailed /readyz and
   * /healthz. 9464 is the usual Prometheus exporter port; 0 picks a free port (logged).
   */
  METRICS_PORT: integer(0, 65535)
    .default(9464)
    .describe(
      'Port of the internal listener of every process: `/metrics`, detailed `/readyz`, `/healthz` (0 picks one and logs it).',
    ),
  /** Loopback by default: metrics and dependency detail are for the node's agents, not the public. */
  INTERNAL_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe("Address the internal listener binds (loopback: for the node's agents only)."),
  /** Rows per claim-publish-mark round: amortises the round trips, still one fast produce request. */
  RELAY_BATCH_SIZE: integer(1, 10_000)
    .default(500)
    .describe('Outbox rows per claim-publish-mark round.'),
  /** Loops per relay process: with 2, one publishes while the other waits on Postgres (bench). */
  RELAY_WORKERS: integer(1, 16)
    .default(2)
    .describe('Relay loops per process, each with its own producer.'),
  /** Fallback when a notification is missed (listener reconnecting) and to pick up retried rows. */
  RELAY_POLL_INTERVAL_MS: integer(10, 600_000)
    .default(1_000)
    .describe('Fallback poll of the relay (NOTIFY wakes it at once).'),
  /** Well above a send's worst case (bounded retries), so a live relay's claim does not expire. */
  RELAY_LEASE_MS: integer(100, 3_600_000)
    .default(60_000)
    .describe('How long a claimed outbox row belongs to its relay before another may take it.'),
  /** A refusal that repeats 5 times over ~15 s (too large, invalid) will not heal: park it. */
  RELAY_MAX_ATTEMPTS: integer(1, 1_000)
    .default(5)
    .describe('Refused publishes of one row before it is parked.'),
  /** An hour of published rows answers "was it sent?"; Kafka keeps the events themselves. */
  OUTBOX_RETENTION_SECONDS: integer(0, 30 * 86_400)
    .default(3_600)
    .describe('Published outbox rows are deleted after this long.'),
});

export type Config = z.infer<typeof configSchema>;

/**
 * Settings that may carry credentials. Each can instead be read from the file named by
 * `<NAME>_FILE` (the container-secrets convention); setting both is an error.
 */
export const FILE_SETTINGS = ['DATABASE_URL', 'REDIS_URL'] as const;

/**
 * The development stack's own user:password pairs (scripts/stack.sh, docker-compose.yml, the
 * defaults above). Anyone who read this repository knows them, so production refuses them.
 */
export const BUILT_IN_CREDENTIALS: readonly string[] = ['payments:payments'];

/**
 * Parses the environment. Empty strings count as unset so `FOO= npm start` takes the default
 * instead of failing on "" - the behaviour most shells and .env files lead users to expect.
 * `readFile` is injectable for tests.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): Config {
  const present: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') present[key] = value;
  }
  for (const name of FILE_SETTINGS) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (present[name] !== undefined) {
      throw new ConfigError(name, `and ${name}_FILE are both set; set only one`);
    }
    present[name] = readSecretFile(`${name}_FILE`, file, readFile);
  }
  const result = configSchema.safeParse(present);
  if (!result.success) {
    const issue = result.error.issues[0];
    const variable = issue?.path[0]?.toString() ?? 'environment';
    const given = present[variable];
    const shown =
      given === undefined || isSecret(variable) ? '' : ` (got ${JSON.stringify(given)})`;
    throw new ConfigError(variable, `${issue?.message ?? 'is invalid'}${shown}`);
  }
  const config = result.data;
  if (config.RATE_LIMIT_UNAUTHENTICATED_BURST * 60 < config.RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE) {
    throw new ConfigError(
      'RATE_LIMIT_UNAUTHENTICATED_BURST',
      "must hold at least one second's worth of RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE",
    );
  }
  if (config.NODE_ENV === 'production') {
    for (const name of FILE_SETTINGS) {
      if (usesBuiltInCredentials(config[name])) {
        throw new ConfigError(
          name,
          'uses the built-in development credentials, refused with NODE_ENV=production',
        );
      }
    }
  }
  return config;
}

/** The file's content without its trailing newline (what `echo url > file` leaves). */
function readSecretFile(
  variable: string,
  file: string,
  readFile: (path: string) => string,
): string {
  let content: string;
  try {
    content = readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'read error';
    throw new ConfigError(variable, `names a file that cannot be read (${code}: ${file})`);
  }
  const value = content.replace(/\r?\n$/, '');
  if (value === '') throw new ConfigError(variable, `names an empty file (${file})`);
  return value;
}

function usesBuiltInCredentials(url: string): boolean {
  const parsed = new URL(url);
  const pair = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  return BUILT_IN_CREDENTIALS.includes(pair);
}

/** URLs may carry passwords: never echo them back in an error line. */
function isSecret(variable: string): boolean {
  return variable.endsWith('_URL');
}
