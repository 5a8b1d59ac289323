import { createServer } from 'node:http';
import { parseIdempotencyKey } from '../../http/idempotency-key-header.js';
import { createDatabaseGuard } from '../../idempotency/database-guard.js';
import { createIdempotencyReaper } from '../../idempotency/idempotency-reaper.js';
import { createIdempotentCreate } from '../../idempotency/idempotent-create.js';
import { createKeyLocks } from '../../idempotency/key-lock.js';
import { createResponseCache, responseCacheKey } from '../../idempotency/response-cache.js';
import { createAuthenticator } from '../../merchants/authenticator.js';
import { createPaymentService, type CreatePaymentDeps } from '../../payments/create-payment.js';
import { closeServer, listen } from '../../platform/lifecycle/http-listen.js';
import { createOutageLog } from '../../platform/resilience/outage-log.js';
import { checkRequired, drainableReadiness } from '../../platform/lifecycle/readiness.js';
import { createRateLimiter } from '../../rate-limits/rate-limiter.js';
import type { MerchantGateDeps } from '../../merchants/merchant-gate.js';
import type { Platform } from '../../platform/lifecycle/platform.js';
import { createRefundService } from '../../refunds/create-refund.js';
import { createHoldPayments } from '../../payments/hold-payment.js';
import { createAddressPolicy } from '../../webhooks/address-policy.js';
import { secretsKeyRing } from '../../platform/secrets/key-ring.js';
import { roleDependencies } from '../role-dependencies.js';
import type { RunningRole } from '../running-role.js';
import { buildApp } from './app.js';

export interface ApiOptions {
  /** Test-only fault injection, see CreatePaymentDeps. */
  beforeWrite?: CreatePaymentDeps['beforeWrite'];
}

/**
 * Serves the HTTP API. `drain` flips /readyz to `draining` and closes each connection after its
 * answer; `close` stops accepting, finishes in-flight requests, then resolves.
 */
export async function startApi(
  platform: Platform,
  options: ApiOptions = {},
): Promise<RunningRole & { port: number }> {
  const { config, logger, pool, redis } = platform;
  const cache = createResponseCache(redis, config.REDIS_KEY_PREFIX);
  const locks = createKeyLocks(redis, config.REDIS_KEY_PREFIX, config.IDEMPOTENCY_LOCK_TTL_MS);
  const postgresOutage = createOutageLog('postgres', logger, config.OUTAGE_LOG_INTERVAL_MS);
  // One per process: the idempotency steps and the rate limiter report the same outage once.
  const redisOutage = createOutageLog('redis', logger, config.OUTAGE_LOG_INTERVAL_MS);
  const createPayment = createPaymentService({
    postgresOutage,
    redisOutage,
    db: pool,
    cache,
    locks,
    logger,
    config,
    ...(options.beforeWrite ? { beforeWrite: options.beforeWrite } : {}),
  });
  const createRefund = createRefundService({ pool, cache, locks, logger, config, redisOutage });
  const rateLimiter = createRateLimiter(redis, {
    keyPrefix: config.REDIS_KEY_PREFIX,
    timeoutMs: config.RATE_LIMIT_REDIS_TIMEOUT_MS,
    outage: redisOutage,
  });
  // One gate (authentication + rate limits) shared by the payments and refunds routes.
  const gate: MerchantGateDeps = {
    authenticator: createAuthenticator(
      pool,
      config.AUTH_CACHE_TTL_MS,
      config.AUTH_NEGATIVE_CACHE_TTL_MS,
    ),
    rateLimit: rateLimiter.limit,
    rateLimitAndPeek: rateLimiter.limitAndPeek,
    peekKeyOf: (req, merchantId) => {
      const key = parseIdempotencyKey(req.headers['idempotency-key']);
      return key.ok ? responseCacheKey(config.REDIS_KEY_PREFIX, merchantId, key.key) : null;
    },
    unauthenticatedPolicy: {
      name: 'unauthenticated',
      ratePerSecond: config.RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE / 60,
      burst: config.RATE_LIMIT_UNAUTHENTICATED_BURST,
    },
  };
  // Ready while it can take payments: Postgres (and Redis only when failing closed), DESIGN 109.
  const needs = roleDependencies('api', config);
  const readiness = drainableReadiness(() =>
    checkRequired(platform.checks, config.READINESS_TIMEOUT_MS, needs),
  );
  const app = buildApp({
    logger,
    readiness: readiness.readiness,
    payments: {
      db: pool,
      ...gate,
      createPayment,
      holds: createHoldPayments({ pool, cache, locks, logger, config, redisOutage }),
      bodyLimitBytes: config.HTTP_BODY_LIMIT_BYTES,
    },
    refunds: {
      db: pool,
      ...gate,
      createRefund,
      bodyLimitBytes: config.HTTP_BODY_LIMIT_BYTES,
    },
    webhooks: {
      db: pool,
      ...gate,
      createOnce: createIdempotentCreate({
        db: pool,
        cache,
        locks,
        logger,
        config,
        redisOutage,
        database: createDatabaseGuard(config.UNAVAILABLE_RETRY_AFTER_SECONDS, postgresOutage),
      }),
      addressPolicy: createAddressPolicy(config.WEBHOOK_ALLOWED_NETWORKS),
      keyRing: secretsKeyRing(config),
      config,
      bodyLimitBytes: config.HTTP_BODY_LIMIT_BYTES,
    },
    events: { db: pool, ...gate, retentionDays: config.EVENT_RETENTION_DAYS },
    unavailableRetryAfterSeconds: config.UNAVAILABLE_RETRY_AFTER_SECONDS,
    requestDeadlineMs: config.REQUEST_DEADLINE_MS,
    traceCallerContext: config.TRACE_CALLER_CONTEXT,
    trustProxy: config.TRUST_PROXY,
    postgresOutage,
    admission: {
      maxInFlight: config.HTTP_MAX_IN_FLIGHT,
      retryAfterSeconds: config.UNAVAILABLE_RETRY_AFTER_SECONDS,
      overload: createOutageLog('request capacity', logger, config.OUTAGE_LOG_INTERVAL_MS),
    },
  });
  const stopReaper = createIdempotencyReaper(pool, logger, {
    batch: config.IDEMPOTENCY_REAPER_BATCH,
    intervalMs: config.IDEMPOTENCY_REAPER_INTERVAL_MS,
  }).start();

  const server = createServer(
    {
      // Slow clients are cut off with 408: headers within HTTP_HEADERS_TIMEOUT_MS, the whole
      // request (body included) within HTTP_REQUEST_TIMEOUT_MS. Node checks both on this
      // interval (default 30 s, far too coarse for a 10 s bound).
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: Math.max(config.HTTP_REQUEST_TIMEOUT_MS, config.HTTP_HEADERS_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(1_000, config.HTTP_HEADERS_TIMEOUT_MS),
    },
    app,
  );
  /** Slightly above common load-balancer idle timeouts (60 s), so the proxy closes first. */
  server.keepAliveTimeout = 65_000;
  // Draining: every answer closes its connection, so keep-alive clients reconnect (to another
  // instance) instead of meeting a reset when the listener closes.
  server.prependListener('request', (_req, res) => {
    if (readiness.draining()) res.setHeader('connection', 'close');
  });
  const port = await listen(server, config.PORT, config.HOST);
  logger.info({ role: 'api', host: config.HOST, port }, 'api listening');
  return {
    name: 'api',
    port,
    drain: readiness.drain,
    close: async () => {
      await closeServer(server);
      await stopReaper();
    },
  };
}
