import { describe, expect, it } from 'vitest';
import { testConfig } from '../support/isolation.js';
import { fatalLines, startRoleProcess } from '../support/role-process.js';

/**
 * DESIGN 122: with NODE_ENV=production the relay refuses topics that one broker's loss would
 * make lose acknowledged events or refuse writes (fewer than 3 replicas, min.insync.replicas
 * below 2): the single-node test stack's topics have 1 and 1. It exits 1 with one fatal line
 * naming the topic; outside production the same relay runs on them (a warning when
 * KAFKA_TOPIC_REPLICATION_FACTOR / _MIN_INSYNC_REPLICAS ask for more than they have).
 *
 * Postgres is out of reach on purpose (port 1): production refuses the local stack's logins
 * (their passwords are in the repository), and neither the relay's topic check nor its
 * "relay ready" waits for the database (it connects to it in the background).
 */

const WAIT_MS = 60_000;

function relayEnv(nodeEnv: string): { env: Record<string, string>; topic: string } {
  const config = testConfig();
  return {
    topic: config.KAFKA_TOPIC_PAYMENTS,
    env: {
      NODE_ENV: nodeEnv,
      DATABASE_URL: 'postgres://svc:s3cret-not-local@127.0.0.1:1/payments',
      KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
      KAFKA_TOPIC_PAYMENTS: config.KAFKA_TOPIC_PAYMENTS,
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    },
  };
}

describe('the relay on under-replicated topics', () => {
  it(
    'when NODE_ENV=production and the topic has 1 replica, then the relay exits 1 with one line naming it',
    async () => {
      const { env, topic } = relayEnv('production');
      const relay = startRoleProcess('apps/relay/main.js', env);
      const timer = setTimeout(() => void relay.stop('SIGKILL'), WAIT_MS);
      const code = await relay.exited;
      clearTimeout(timer);
      expect(code, relay.output()).toBe(1);
      expect(fatalLines(relay.output())).toEqual([
        `Kafka topic ${topic} has replication factor 1 (at least 3) and min.insync.replicas 1 (at least 2): refused with NODE_ENV=production (DESIGN 122)`,
      ]);
      expect(relay.output()).not.toContain('relay ready');
    },
    WAIT_MS + 10_000,
  );

  it('when NODE_ENV=development, then the same relay runs on such a topic, warning once when the settings ask for more', async () => {
    const { env, topic } = relayEnv('development');
    const warnings = (output: string) =>
      output.split('\n').filter((line) => line.includes(`Kafka topic ${topic} has`));
    const relay = startRoleProcess('apps/relay/main.js', env);
    try {
      await relay.logLine('relay ready');
      expect(fatalLines(relay.output())).toEqual([]);
      expect(warnings(relay.output())).toEqual([]);
    } finally {
      expect(await relay.stop()).toBe(0);
    }

    // The topic exists now (1 replica); settings asking for 3 cannot change it: one warning.
    const asking = startRoleProcess('apps/relay/main.js', {
      ...env,
      KAFKA_TOPIC_REPLICATION_FACTOR: '3',
      KAFKA_TOPIC_MIN_INSYNC_REPLICAS: '2',
    });
    try {
      await asking.logLine('relay ready');
      const lines = warnings(asking.output()).map(
        (line) => JSON.parse(line) as Record<string, unknown>,
      );
      expect(lines.map((line) => [line.level, line.msg])).toEqual([
        [
          40,
          `Kafka topic ${topic} has replication factor 1 (at least 3) and min.insync.replicas 1 (at least 2), below KAFKA_TOPIC_REPLICATION_FACTOR / MIN_INSYNC_REPLICAS`,
        ],
      ]);
    } finally {
      expect(await asking.stop()).toBe(0);
    }
  });
});
