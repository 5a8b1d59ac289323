import { listenForOutbox } from '../../outbox/outbox-listener.js';
import { registerBacklogProbe } from '../../outbox/outbox-metrics.js';
import { readBacklog } from '../../outbox/outbox-repository.js';
import { connectInBackground } from '../../platform/lifecycle/connect-in-background.js';
import {
  configuredReplication,
  ensureTopics,
  guardTopicReplication,
} from '../../platform/kafka/kafka.js';
import type { Platform } from '../../platform/lifecycle/platform.js';
import { refuseStart } from '../refuse-start.js';
import type { RunningRole } from '../running-role.js';
import { createRelayKafka } from '../../outbox/relay-kafka.js';
import { createRelayWorkers } from '../../outbox/relay.js';

/**
 * The outbox relay role: once its topic exists and its producers are connected ("relay ready"),
 * RELAY_WORKERS loops claim -> publish -> mark, woken by the outbox trigger's NOTIFY and by a
 * fallback poll.
 * Kafka down at boot delays readiness; it never stops the process.
 */
export function startRelay(platform: Platform): Promise<RunningRole> {
  const { config, pool } = platform;
  const logger = platform.logger.child({ role: 'relay' });
  const kafka = createRelayKafka(config, logger);
  const relay = createRelayWorkers({ db: pool, kafka, logger, config }, config.RELAY_WORKERS);
  const unregisterProbe = registerBacklogProbe(() => readBacklog(pool));
  const listener = listenForOutbox({
    connectionString: config.DATABASE_URL,
    logger,
    onNotify: relay.wake,
    outageLogIntervalMs: config.OUTAGE_LOG_INTERVAL_MS,
  });
  const connection = connectInBackground(
    'relay',
    async () => {
      // The producer never creates topics; make sure ours exists (existing ones are untouched).
      await platform.admin.connect();
      await ensureTopics(
        platform.admin,
        [config.KAFKA_TOPIC_PAYMENTS],
        config.KAFKA_TOPIC_PARTITIONS,
        {},
        configuredReplication(config),
      );
      // Production refuses a topic with fewer than 3 replicas or min ISR 2 (DESIGN 122).
      await guardTopicReplication(
        platform.admin,
        config,
        [config.KAFKA_TOPIC_PAYMENTS],
        logger,
        refuseStart(logger),
      );
      await relay.connect();
    },
    logger,
    () => {
      logger.info('relay ready');
      void relay.run();
    },
  );
  return Promise.resolve({
    name: 'relay',
    close: async () => {
      connection.stop();
      await connection.connected;
      await Promise.all([relay.stop(), listener.close()]);
      unregisterProbe();
    },
  });
}
