import { parseArgs } from 'node:util';
import { redactStoredResponses } from '../idempotency/redact-stored-responses.js';
import { responseCacheKey } from '../idempotency/response-cache.js';
import { loadConfig } from '../platform/config/config.js';
import { closeRedis, createRedis } from '../platform/redis/redis.js';
import { secretsKeyRing } from '../platform/secrets/key-ring.js';
import { createLogger } from '../platform/telemetry/logger.js';
import { CLEAR_SECRET_IN_ANSWER, reencryptSecrets } from '../webhooks/secret-reencryption.js';
import { runCli, UsageError, withPool } from './run-cli.js';

const USAGE = 'usage: secrets:reencrypt [-- --batch <rows per transaction, 500>]';

/**
 * `npm run secrets:reencrypt` (the owner's login, DATABASE_URL): seals every webhook signing
 * secret under the newest key of SECRETS_KEYS, the ones still in clear included (then cleared),
 * and redacts the clear secrets of keyed-create answers the previous release stored, deleting
 * their Redis copies. Run it after adding a key in front of the ring (then the old key may go),
 * and once after the upgrade to migration 0031 when no process of the previous release is left.
 * Idempotent; prints one JSON line.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batch: { type: 'string' } }, strict: true });
  const batch = Number(values.batch ?? '500');
  if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) {
    throw new UsageError(`${USAGE}\n(--batch is an integer from 1 to 10000)`);
  }
  const config = loadConfig();
  const ring = secretsKeyRing(config);
  const { reencrypted, redacted } = await withPool('secrets-reencrypt', async (pool) => ({
    reencrypted: await reencryptSecrets(pool, ring, batch),
    redacted: await redactStoredResponses(pool, CLEAR_SECRET_IN_ANSWER, batch),
  }));
  let uncached = 0;
  if (redacted.length > 0) {
    const redis = createRedis(config, createLogger({ ...config, LOG_LEVEL: 'warn' }));
    try {
      await redis.connect();
      const keys = redacted.map(({ merchantId, key }) =>
        responseCacheKey(config.REDIS_KEY_PREFIX, merchantId, key),
      );
      // One DEL a key: the keys live in many Cluster slots (one multi-key DEL would be
      // CROSSSLOT there, DESIGN 123); a batch goes out together, auto-pipelined.
      for (let start = 0; start < keys.length; start += batch) {
        const deleted = await Promise.all(
          keys.slice(start, start + batch).map((k) => redis.del(k)),
        );
        uncached += deleted.reduce((sum, n) => sum + n, 0);
      }
    } finally {
      await closeRedis(redis);
    }
  }
  process.stdout.write(
    `${JSON.stringify({
      key_id: ring.currentKeyId,
      secrets_reencrypted: reencrypted,
      stored_answers_redacted: redacted.length,
      cached_answers_deleted: uncached,
    })}\n`,
  );
}

await runCli('secrets:reencrypt', USAGE, main);
