import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { acquirerLinkSettings } from './acquirer-link-settings.js';
import { apiSettings } from './api-settings.js';
import { connectionSettings } from './connection-settings.js';
import { ConfigError } from './config-error.js';
import { checkKafkaSettings, kafkaSettings } from './kafka-settings.js';
import { migrationSettings } from './migration-settings.js';
import { pipelineSettings } from './pipeline-settings.js';
import { checkRedisTopology, redisSettings } from './redis-settings.js';
import { retentionSettings } from './retention-settings.js';
import { secretsSettings } from './secrets-settings.js';
import { webhookSettings } from './webhook-settings.js';

export { ConfigError };

/**
 * The whole runtime configuration of every process role, read from the environment once at
 * boot. Defaults point at the local native stack (`scripts/stack.sh`), so `npm run up` needs no
 * settings; anything invalid stops the process with one line naming the variable.
 */

// The settings, by area; docs/configuration.md lists them in this order (npm run docs:config).
export const configSchema = z.object({
  ...connectionSettings,
  ...kafkaSettings,
  ...redisSettings,
  ...apiSettings,
  ...pipelineSettings,
  ...acquirerLinkSettings,
  ...webhookSettings,
  ...secretsSettings,
  ...retentionSettings,
  ...migrationSettings,
});

export type Config = z.infer<typeof configSchema>;

/**
 * Settings that may carry credentials. Each can instead be read from the file named by
 * `<NAME>_FILE` (the container-secrets convention); setting both is an error.
 */
export const FILE_SETTINGS = [
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_SENTINEL_PASSWORD',
  'SECRETS_KEYS',
  'ACQUIRER_TOKEN',
  'KAFKA_SASL_PASSWORD',
] as const;

/** The settings whose user:password may be the development stack's. */
const CREDENTIAL_URLS = ['DATABASE_URL', 'REDIS_URL'] as const;

/**
 * The development stack's own user:password pairs (scripts/stack.sh, docker-compose.yml, the
 * defaults above): the owner and the per-process logins (scripts/db/create-roles.sql,
 * password = name), and the Redis users (scripts/redis/acl-users.sh: payments, payments_api).
 * Anyone who read this repository knows them, so production refuses them.
 */
export const BUILT_IN_CREDENTIALS: readonly string[] = [
  'payments:payments',
  'payments_api:payments_api',
  'payments_relay:payments_relay',
  'payments_settlement:payments_settlement',
  'payments_webhooks:payments_webhooks',
  'payments_acquirer:payments_acquirer',
];

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
  checkJobLeases(config);
  checkKafkaSettings(config, readFile);
  checkRedisTopology(config);
  if (config.NODE_ENV === 'production') {
    for (const name of CREDENTIAL_URLS) {
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

/**
 * A settlement or refund job's lease must outlast one attempt: the acquirer call
 * (ACQUIRER_TIMEOUT_MS) and then the completion, whose statements the client gives up on after
 * DATABASE_QUERY_TIMEOUT_MS (the later of the two bounds: the statement timeout cannot fire on a
 * frozen server). A shorter lease lets another worker claim a job that a live worker is still
 * working: its writes are then refused (the lease owner token) and the attempt is wasted.
 */
function checkJobLeases(config: Config): void {
  const attemptMs = config.ACQUIRER_TIMEOUT_MS + config.DATABASE_QUERY_TIMEOUT_MS;
  for (const name of ['SETTLEMENT_LEASE_MS', 'REFUND_LEASE_MS'] as const) {
    if (config[name] <= attemptMs) {
      throw new ConfigError(
        name,
        `must exceed ACQUIRER_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS (${String(config.ACQUIRER_TIMEOUT_MS)} + ${String(config.DATABASE_QUERY_TIMEOUT_MS)} = ${String(attemptMs)} ms), one attempt's longest run (got ${String(config[name])})`,
      );
    }
  }
  const deliveryMs = config.WEBHOOK_TIMEOUT_MS + config.DATABASE_QUERY_TIMEOUT_MS;
  if (config.WEBHOOK_LEASE_MS <= deliveryMs) {
    throw new ConfigError(
      'WEBHOOK_LEASE_MS',
      `must exceed WEBHOOK_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS (${String(config.WEBHOOK_TIMEOUT_MS)} + ${String(config.DATABASE_QUERY_TIMEOUT_MS)} = ${String(deliveryMs)} ms), one delivery's longest run (got ${String(config.WEBHOOK_LEASE_MS)})`,
    );
  }
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

/** URLs may carry passwords, key rings are keys, tokens and passwords are secrets: never echo them. */
function isSecret(variable: string): boolean {
  return (
    variable.endsWith('_URL') ||
    variable === 'SECRETS_KEYS' ||
    variable.endsWith('_TOKEN') ||
    variable.endsWith('_PASSWORD')
  );
}
