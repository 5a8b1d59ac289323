import { connectInBackground } from '../../platform/connect-in-background.js';
import type { Platform } from '../../platform/platform.js';
import type { RunningRole } from '../running-role.js';

/**
 * The settlement consumer role. For now it only connects its consumer and reports ready;
 * consuming `payment.created` arrives with settlement (issue 5).
 */
export function startSettlement(platform: Platform): Promise<RunningRole> {
  const logger = platform.logger.child({ role: 'settlement' });
  const consumer = platform.kafka.consumer({ groupId: platform.config.KAFKA_CONSUMER_GROUP });
  const connection = connectInBackground(
    'settlement consumer',
    () => consumer.connect(),
    logger,
    () => {
      logger.info('settlement ready');
    },
  );
  return Promise.resolve({
    name: 'settlement',
    close: async () => {
      connection.stop();
      if (await connection.connected) await consumer.disconnect();
    },
  });
}
