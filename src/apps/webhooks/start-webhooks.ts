import { registerJobProbes } from '../../jobs/job-metrics.js';
import type { Platform } from '../../platform/lifecycle/platform.js';
import { createWebhookDeliveryWorker } from '../../webhooks/webhook-delivery-worker.js';
import type { RunningRole } from '../running-role.js';
import { registerWebhookEndpointProbe } from '../../webhooks/webhook-endpoint-metrics.js';
import { startWebhookEventReaper } from '../../webhooks/webhook-event-reaper.js';
import { countClearSecrets } from '../../webhooks/secret-reencryption.js';

/** How often events past WEBHOOK_EVENT_RETENTION_SECONDS are looked for. */
const REAP_INTERVAL_MS = 60_000;

export interface WebhooksOptions {
  /** The job-metrics kinds this role reports; run-roles widens it in a process with settlement. */
  jobProbeKinds?: Parameters<typeof registerJobProbes>[1];
}

/**
 * The webhooks role: the delivery worker (claims due delivery jobs on the job engine, sends
 * them signed, records each attempt; src/webhooks/webhook-delivery-worker.ts) as a process of its own
 * on the payments_webhooks login, plus the deletion of events past retention. It needs Postgres
 * only (no Kafka): the deliveries are written by the outbox writer's statement in settlement's
 * transactions. Postgres down at boot or later is the worker's to wait out (readiness reports
 * it); it never stops the process. Close lets the deliveries in flight finish (each bounded by
 * WEBHOOK_TIMEOUT_MS); an unfinished one is retried by another process once its lease ends.
 */
export function startWebhooks(
  platform: Platform,
  options: WebhooksOptions = {},
): Promise<RunningRole> {
  const { config, pool } = platform;
  const logger = platform.logger.child({ role: 'webhooks' });
  const delivery = createWebhookDeliveryWorker({ pool, logger, config });
  const unregisterEndpointProbe = registerWebhookEndpointProbe(
    pool,
    config.WEBHOOK_MERCHANT_CONCURRENCY,
  );
  const unregisterJobProbes = registerJobProbes(pool, options.jobProbeKinds ?? ['webhook']);
  const reaper = startWebhookEventReaper(pool, logger, {
    retentionSeconds: config.WEBHOOK_EVENT_RETENTION_SECONDS,
    intervalMs: REAP_INTERVAL_MS,
  });
  delivery.start();
  // After an upgrade to migration 0031: a reminder while secrets are still stored in clear.
  countClearSecrets(pool).then(
    (clear) => {
      if (clear > 0) {
        logger.warn(
          { clear_secrets: clear },
          'webhook secrets stored in clear: run `npm run secrets:reencrypt` once no process of the previous release runs',
        );
      }
    },
    () => undefined,
  );
  logger.info(
    {
      concurrency: config.WEBHOOK_CONCURRENCY,
      endpoint_concurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
      merchant_concurrency: config.WEBHOOK_MERCHANT_CONCURRENCY,
    },
    'webhooks ready',
  );
  return Promise.resolve({
    name: 'webhooks',
    close: async () => {
      await Promise.all([delivery.stop(), reaper.stop()]);
      unregisterJobProbes();
      unregisterEndpointProbe();
    },
  });
}
