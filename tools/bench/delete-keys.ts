import type { Config } from '../../src/platform/config/config.js';
import type { Logger } from '../../src/platform/telemetry/logger.js';
import { closeRedis, createRedis } from '../../src/platform/redis/redis.js';
import { deleteKeysWithPrefix } from '../support/delete-keys-with-prefix.js';

/** Removes the cached responses and locks a run left in Redis (they would live a day). */
export async function deleteKeys(config: Config, logger: Logger, prefix: string): Promise<void> {
  const redis = createRedis(config, logger);
  try {
    await redis.connect();
    await deleteKeysWithPrefix(redis, prefix);
  } finally {
    await closeRedis(redis);
  }
}
