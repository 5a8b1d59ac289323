import { z } from 'zod';

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
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: integer(0, 65535).default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `pretty` needs the pino-pretty dev dependency; production logs stay JSON. */
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  DATABASE_URL: urlWithProtocol(
    ['postgres:', 'postgresql:'],
    'postgres://user:password@host:5432/db',
  ).default('postgres://payments:payments@127.0.0.1:5432/payments'),
  /** Two cores serve about this many concurrent transactions usefully; more connections only queue. */
  DATABASE_POOL_MAX: integer(1, 500).default(20),
  /** A statement that runs longer than this is a bug or a lock pile-up; fail it rather than hang. */
  DATABASE_STATEMENT_TIMEOUT_MS: integer(100, 600_000).default(10_000),
  REDIS_URL: urlWithProtocol(['redis:', 'rediss:'], 'redis://host:6379').default(
    'redis://127.0.0.1:6379',
  ),
  /** Every key this service writes starts with this, so several deployments can share a Redis. */
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]*$/, { message: 'may hold only letters, digits, ":", "_" and "-"' })
    .default('payments:'),
  KAFKA_BROKERS: brokerList.default(['127.0.0.1:9092']),
  KAFKA_CLIENT_ID: z.string().min(1).default('payments-service'),
  KAFKA_TOPIC_PAYMENTS: topicName.default('payments.events'),
  KAFKA_TOPIC_DLQ: topicName.default('payments.settlement.dlq'),
  KAFKA_CONSUMER_GROUP: z.string().min(1).default('payments-settlement'),
  /** A readiness probe must answer before the orchestrator's own timeout (typically 1-5 s). */
  READINESS_TIMEOUT_MS: integer(100, 60_000).default(2_000),
  /** Long enough to finish in-flight requests, shorter than a typical 30 s SIGKILL grace period. */
  SHUTDOWN_TIMEOUT_MS: integer(100, 120_000).default(15_000),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly problem: string,
  ) {
    super(`invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment. Empty strings count as unset so `FOO= npm start` takes the default
 * instead of failing on "" - the behaviour most shells and .env files lead users to expect.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') present[key] = value;
  }
  const result = configSchema.safeParse(present);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const variable = issue?.path[0]?.toString() ?? 'environment';
  const given = present[variable];
  const shown = given === undefined || isSecret(variable) ? '' : ` (got ${JSON.stringify(given)})`;
  throw new ConfigError(variable, `${issue?.message ?? 'is invalid'}${shown}`);
}

/** URLs may carry passwords: never echo them back in an error line. */
function isSecret(variable: string): boolean {
  return variable.endsWith('_URL');
}
