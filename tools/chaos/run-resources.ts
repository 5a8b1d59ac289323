import pg from 'pg';
import { loadConfig, type Config } from '../../src/platform/config/config.js';
import { createKafka } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';

/**
 * The run's own resources on a shared stack: a database (fresh, so verify can judge all of it,
 * including rows that belong to no payment), its two topics and consumer group, and a Redis
 * key prefix. Nothing another user of the stack has is read, written or judged.
 */
export interface RunResources {
  databaseName: string;
  databaseUrl: string;
  paymentsTopic: string;
  dlqTopic: string;
  consumerGroup: string;
  redisPrefix: string;
}

export function runResources(runId: string, stackDatabaseUrl: string): RunResources {
  const databaseName = runId.replace(/-/g, '_');
  const url = new URL(stackDatabaseUrl);
  url.pathname = `/${databaseName}`;
  return {
    databaseName,
    databaseUrl: url.toString(),
    paymentsTopic: `${runId}.payments`,
    dlqTopic: `${runId}.dlq`,
    consumerGroup: `${runId}-settlement`,
    redisPrefix: `${runId}:`,
  };
}

export async function createDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (client) =>
    client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  );
}

/**
 * Deletes `topics` on the cluster `env` names (KAFKA_BROKERS, and TLS/SASL on the HA topology);
 * only its KAFKA_* settings are read, so no other setting can stop the cleanup.
 */
export async function deleteTopics(
  env: NodeJS.ProcessEnv,
  topics: readonly string[],
): Promise<void> {
  const kafka = createKafka(
    { ...kafkaConfig(env), KAFKA_CLIENT_ID: 'chaos-cleanup' },
    createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }),
    { retry: { retries: 2, initialRetryTime: 300, maxRetryTime: 2_000 } },
  );
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((topic) => existing.has(topic));
    if (present.length > 0) await admin.deleteTopics({ topics: present, timeout: 10_000 });
  } finally {
    await admin.disconnect();
  }
}

/** The Kafka settings of `env` (KAFKA_* only), as the roles of the run get them. */
export function kafkaConfig(env: NodeJS.ProcessEnv): Config {
  return loadConfig(
    Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('KAFKA_'))),
  );
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Drops the run's database and deletes its topics; a failure of either is ignored. */
export async function removeRunResources(
  adminUrl: string,
  kafkaEnv: NodeJS.ProcessEnv,
  resources: RunResources,
): Promise<void> {
  await Promise.allSettled([
    dropDatabase(adminUrl, resources.databaseName),
    deleteTopics(kafkaEnv, [resources.paymentsTopic, resources.dlqTopic]),
  ]);
}
