import { connectInBackground } from '../../platform/connect-in-background.js';
import { createIdempotentProducer } from '../../platform/kafka.js';
import type { Platform } from '../../platform/platform.js';
import type { RunningRole } from '../running-role.js';

/**
 * The outbox relay role. For now it only connects its idempotent producer and reports ready;
 * the claim-publish-mark loop arrives with the outbox (issue 4). Kafka being down at boot
 * delays readiness, it does not stop the process.
 */
export function startRelay(platform: Platform): Promise<RunningRole> {
  const logger = platform.logger.child({ role: 'relay' });
  const producer = createIdempotentProducer(platform.kafka);
  const connection = connectInBackground(
    'relay producer',
    () => producer.connect(),
    logger,
    () => {
      logger.info('relay ready');
    },
  );
  return Promise.resolve({
    name: 'relay',
    close: async () => {
      connection.stop();
      if (await connection.connected) await producer.disconnect();
    },
  });
}
