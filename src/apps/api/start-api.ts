import { createServer } from 'node:http';
import { createIdempotencyReaper } from '../../idempotency/idempotency-reaper.js';
import { createKeyLocks } from '../../idempotency/key-lock.js';
import { createResponseCache } from '../../idempotency/response-cache.js';
import { createAuthenticator } from '../../merchants/authenticator.js';
import { createPaymentService, type CreatePaymentDeps } from '../../payments/create-payment.js';
import { closeServer, listen } from '../../platform/http-listen.js';
import { checkReadiness } from '../../platform/readiness.js';
import { createRateLimit } from '../../rate-limits/rate-limiter.js';
import type { Platform } from '../../platform/platform.js';
import type { RunningRole } from '../running-role.js';
import { buildApp } from './app.js';

export interface ApiOptions {
  /** Test-only fault injection, see CreatePaymentDeps. */
  beforeWrite?: CreatePaymentDeps['beforeWrite'];
}

/** Serves the HTTP API; closing stops accepting, drains in-flight requests, then resolves. */
export async function startApi(
  platform: Platform,
  options: ApiOptions = {},
): Promise<RunningRole & { port: number }> {
  const { config, logger, pool, redis } = platform;
  const createPayment = createPaymentService({
    db: pool,
    cache: createResponseCache(redis, config.REDIS_KEY_PREFIX),
    locks: createKeyLocks(redis, config.REDIS_KEY_PREFIX, config.IDEMPOTENCY_LOCK_TTL_MS),
    logger,
    config,
    ...(options.beforeWrite ? { beforeWrite: options.beforeWrite } : {}),
  });
  const app = buildApp({
    logger,
    readiness: () => checkReadiness(platform.checks, config.READINESS_TIMEOUT_MS),
    payments: {
      db: pool,
      authenticator: createAuthenticator(
        pool,
        config.AUTH_CACHE_TTL_MS,
        config.AUTH_NEGATIVE_CACHE_TTL_MS,
      ),
      rateLimit: createRateLimit(redis, {
        keyPrefix: config.REDIS_KEY_PREFIX,
        timeoutMs: config.RATE_LIMIT_REDIS_TIMEOUT_MS,
        logger,
      }),
      unauthenticatedPolicy: {
        name: 'unauthenticated',
        ratePerSecond: config.RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE / 60,
        burst: config.RATE_LIMIT_UNAUTHENTICATED_BURST,
      },
      createPayment,
      bodyLimitBytes: config.HTTP_BODY_LIMIT_BYTES,
    },
    unavailableRetryAfterSeconds: config.UNAVAILABLE_RETRY_AFTER_SECONDS,
  });
  const stopReaper = createIdempotencyReaper(pool, logger, {
    batch: config.IDEMPOTENCY_REAPER_BATCH,
    intervalMs: config.IDEMPOTENCY_REAPER_INTERVAL_MS,
  }).start();

  const server = createServer(app);
  /** Slightly above common load-balancer idle timeouts (60 s), so the proxy closes first. */
  server.keepAliveTimeout = 65_000;
  const port = await listen(server, config.PORT, config.HOST);
  logger.info({ role: 'api', host: config.HOST, port }, 'api listening');
  return {
    name: 'api',
    port,
    close: async () => {
      await closeServer(server);
      await stopReaper();
    },
  };
}
