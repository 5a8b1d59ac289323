// First: it replaces a kafkajs module before kafkajs loads (kafkajs-read-committed.ts).
import '../../src/platform/kafka/kafkajs-read-committed.js';
import { randomBytes } from 'node:crypto';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/platform/config/config.js';
import {
  configuredReplication,
  createKafka,
  ensureTopics,
  PRODUCTION_REPLICATION,
  replicationShortfalls,
  untilTopicsKnown,
  type Admin,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { fatalLines, startRoleProcess } from '../support/role-process.js';

/**
 * DESIGN 122 on the HA topology's Kafka (`STACK_TOPOLOGY=ha scripts/stack.sh start kafka`; the
 * settings come from `STACK_TOPOLOGY=ha scripts/stack.sh env`): the service's client logs in over
 * SASL_SSL (SCRAM-SHA-512, the broker certificate verified against the topology's CA) and creates
 * its topics with 3 replicas and min.insync.replicas 2; a wrong password is refused at once with
 * a clear error; a production relay starts there, and refuses a topic made with 1 replica.
 */

const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });
const suffix = randomBytes(4).toString('hex');

/** The service's Kafka settings, as the roles read them from the environment. */
function haConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({ ...process.env, NODE_ENV: 'test', ...overrides });
}

/** Exactly the Kafka settings `scripts/stack.sh env` printed, for a role process. */
function kafkaEnv(): Record<string, string> {
  const names = [
    'KAFKA_BROKERS',
    'KAFKA_SSL_CA_FILE',
    'KAFKA_SASL_MECHANISM',
    'KAFKA_SASL_USERNAME',
    'KAFKA_SASL_PASSWORD',
    'KAFKA_TOPIC_REPLICATION_FACTOR',
    'KAFKA_TOPIC_MIN_INSYNC_REPLICAS',
  ];
  return Object.fromEntries(names.map((name) => [name, process.env[name] ?? '']));
}

let admin: Admin;
const created: string[] = [];

beforeAll(async () => {
  const config = haConfig();
  expect(config.KAFKA_SASL_MECHANISM, 'run with STACK_TOPOLOGY=ha scripts/stack.sh env').toBe(
    'scram-sha-512',
  );
  admin = createKafka(config, silent).admin();
  await admin.connect();
});

afterAll(async () => {
  if (created.length > 0) await admin.deleteTopics({ topics: created, timeout: 30_000 });
  await admin.disconnect();
});

describe('the HA Kafka: SASL_SSL and replication', () => {
  it('when the service creates its topics over SASL_SSL, then they have 3 replicas and min.insync.replicas 2', async () => {
    const config = haConfig();
    expect(config.KAFKA_TOPIC_REPLICATION_FACTOR).toBe(3);
    expect(config.KAFKA_TOPIC_MIN_INSYNC_REPLICAS).toBe(2);
    const topic = `ha.kafka.${suffix}.created`;
    created.push(topic);
    await ensureTopics(admin, [topic], 3, {}, configuredReplication(config));

    // Asked of any broker: one that has not applied the new topic yet is asked again.
    const { topics } = await untilTopicsKnown('topic known', () =>
      admin.fetchTopicMetadata({ topics: [topic] }),
    );
    const partitions = topics[0]?.partitions ?? [];
    expect(partitions).toHaveLength(3);
    for (const partition of partitions) expect(partition.replicas).toHaveLength(3);
    const { resources } = await untilTopicsKnown('topic known', () =>
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          {
            type: kafkajs.ConfigResourceTypes.TOPIC,
            name: topic,
            configNames: ['min.insync.replicas'],
          },
        ],
      }),
    );
    expect(resources[0]?.configEntries[0]?.configValue).toBe('2');
    expect(await replicationShortfalls(admin, [topic], PRODUCTION_REPLICATION)).toEqual([]);
  });

  it.each([
    [
      'the password is wrong',
      { KAFKA_SASL_PASSWORD: 'not-the-password' },
      /SASL SCRAM SHA512 authentication failed/,
    ],
    [
      "the client does not trust the topology's CA",
      { KAFKA_SSL_CA_FILE: '', KAFKA_SSL: 'true' },
      /self.signed certificate|unable to (get|verify)/i,
    ],
  ])(
    'when %s, then the connection is refused within seconds with a clear error',
    async (_what, settings, message) => {
      const refused = createKafka(haConfig(settings), silent, {
        retry: { retries: 0, initialRetryTime: 100, maxRetryTime: 100 },
      }).admin();
      const started = Date.now();
      const error = await refused.connect().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      await refused.disconnect();
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(message);
      expect(Date.now() - started).toBeLessThan(15_000);
    },
  );

  it('when the relay and settlement start with NODE_ENV=production, then they run on topics of 3 replicas and the relay refuses one of 1', async () => {
    const env = {
      ...kafkaEnv(),
      NODE_ENV: 'production',
      // Out of reach on purpose: production refuses the local logins, and neither the roles'
      // topic check nor their "ready" waits for the database (they connect to it in the background).
      DATABASE_URL: 'postgres://svc:s3cret-not-local@127.0.0.1:1/payments',
      KAFKA_TOPIC_PAYMENTS: `ha.kafka.${suffix}.payments`,
      KAFKA_TOPIC_DLQ: `ha.kafka.${suffix}.dlq`,
      KAFKA_CONSUMER_GROUP: `ha-kafka-${suffix}`,
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    };
    created.push(env.KAFKA_TOPIC_PAYMENTS, env.KAFKA_TOPIC_DLQ);
    for (const role of ['relay', 'settlement']) {
      const proc = startRoleProcess(`apps/${role}/main.js`, env);
      try {
        await proc.logLine(`${role} ready`);
        expect(fatalLines(proc.output()), role).toEqual([]);
      } finally {
        expect(await proc.stop(), role).toBe(0);
      }
    }
    const topics = [env.KAFKA_TOPIC_PAYMENTS, env.KAFKA_TOPIC_DLQ];
    expect(await replicationShortfalls(admin, topics, PRODUCTION_REPLICATION)).toEqual([]);

    const thin = `ha.kafka.${suffix}.thin`;
    created.push(thin);
    await ensureTopics(admin, [thin], 3, {}, { replicationFactor: 1, minInsyncReplicas: 1 });
    const refused = startRoleProcess('apps/relay/main.js', { ...env, KAFKA_TOPIC_PAYMENTS: thin });
    const timer = setTimeout(() => void refused.stop('SIGKILL'), 120_000);
    const code = await refused.exited;
    clearTimeout(timer);
    expect(code, refused.output()).toBe(1);
    expect(fatalLines(refused.output())).toEqual([
      `Kafka topic ${thin} has replication factor 1 (at least 3) and min.insync.replicas 1 (at least 2): refused with NODE_ENV=production (DESIGN 122)`,
    ]);
  });
});
