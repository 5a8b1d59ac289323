import type { DeadLetterOutbox } from '../jobs/dead-letters/dead-letter-job.js';
import { WEBHOOK_JOBS } from '../jobs/job-table.js';
import {
  createJobWorker,
  type AttemptAnswer,
  type JobHandler,
  type JobOutcome,
  type JobPolicy,
} from '../jobs/job-worker.js';
import { LeaseLostError } from '../jobs/lease-lost.js';
import type { Config } from '../platform/config/config.js';
import type { Pool, Queryable } from '../platform/database/db.js';
import { secretsKeyRing, type KeyRing } from '../platform/secrets/key-ring.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { createAddressPolicy } from './address-policy.js';
import {
  claimDeliveries,
  deliveryClaimFilter,
  markDelivered,
  markFailed,
  recordAttempt,
  type ClaimedDelivery,
} from './webhook-job-store.js';
import { parseRetryAfterMs } from './retry-after.js';
import { webhookMetrics, type WebhookDeliveryOutcome } from './webhook-metrics.js';
import { scheduleSpanMs, webhookRetryDelayMs } from './webhook-retry-delay.js';
import { openWebhookSecret } from './webhook-secret.js';
import { createWebhookSender, type SendResult } from './webhook-sender.js';

/** The settings the delivery worker reads. */
export type WebhookDeliverySettings = Pick<
  Config,
  | 'WEBHOOK_ALLOWED_NETWORKS'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_RETRY_SCHEDULE'
  | 'WEBHOOK_CONCURRENCY'
  | 'WEBHOOK_ENDPOINT_CONCURRENCY'
  | 'WEBHOOK_MERCHANT_CONCURRENCY'
  | 'WEBHOOK_LEASE_MS'
  | 'WEBHOOK_POLL_MS'
  | 'NODE_ENV'
> &
  Partial<Pick<Config, 'OUTAGE_LOG_INTERVAL_MS' | 'SECRETS_KEYS'>>;

export interface WebhookDeliveryDeps {
  pool: Pool;
  logger: Logger;
  config: WebhookDeliverySettings;
  /** Opens the sealed signing secrets; the ring of SECRETS_KEYS when absent. */
  keyRing?: KeyRing;
  random?: () => number;
}

export interface WebhookDeliveryWorker {
  start(): void;
  /** Stops claiming; in-flight deliveries finish (each bounded by WEBHOOK_TIMEOUT_MS). */
  stop(): Promise<void>;
  /** New deliveries were queued: claim at once instead of at the next poll. */
  wake(): void;
  /** Claims one batch of due deliveries and sends them all: the step tests drive. */
  runOnce(): Promise<WebhookDeliveryOutcome[]>;
}

/** What an answer ends a delivery with (anything else is retried). */
type DeliveryFinal = 'delivered' | 'gone' | 'endpoint_disabled';

/** Webhooks never dead-letter (they give up: giveUp); the engine's dead-letter hooks are unused. */
const NO_DEAD_LETTERS: DeadLetterOutbox = { topic: '', wake: () => undefined };

function resultLabel({ statusCode, errorClass }: SendResult): string {
  if (statusCode === null) return errorClass ?? 'connection_error';
  return `${String(Math.floor(statusCode / 100))}xx`;
}

function toOutcome({ result, final }: JobOutcome<ClaimedDelivery, DeliveryFinal>) {
  if (result === 'completed' || result === 'unchanged') return final ?? 'delivered';
  if (result === 'dead') return 'exhausted';
  if (result === 'step_failed') return 'error';
  return result;
}

/**
 * Webhook deliveries on the job engine (kind `webhook`): a claimed delivery (in event order per
 * endpoint and payment, at most WEBHOOK_ENDPOINT_CONCURRENCY in flight per endpoint in this
 * process and WEBHOOK_MERCHANT_CONCURRENCY per merchant across the fleet) is POSTed
 * signed; every attempt is recorded (an attempt row, the delivery's last_* columns). 2xx:
 * delivered. 410: the endpoint disabled ('gone') with its pending deliveries. Anything else:
 * retried after the schedule's next step (+-20%, never before a Retry-After), the endpoint's
 * failing_since set; after the last step the delivery fails ('attempts_exhausted') and an
 * endpoint failing for longer than the whole schedule is disabled ('failing').
 */
export function createWebhookDeliveryWorker(deps: WebhookDeliveryDeps): WebhookDeliveryWorker {
  const { pool, logger, config } = deps;
  const random = deps.random ?? Math.random;
  const schedule = config.WEBHOOK_RETRY_SCHEDULE;
  const cap = config.WEBHOOK_ENDPOINT_CONCURRENCY;
  const caps = { endpoint: cap, merchant: config.WEBHOOK_MERCHANT_CONCURRENCY };
  const policy = createAddressPolicy(config.WEBHOOK_ALLOWED_NETWORKS);
  const sender = createWebhookSender({ timeoutMs: config.WEBHOOK_TIMEOUT_MS, policy });
  const keyRing = deps.keyRing ?? secretsKeyRing(config);

  async function attempt(job: ClaimedDelivery): Promise<AttemptAnswer<DeliveryFinal>> {
    if (job.endpointDisabled) return { kind: 'final', final: 'endpoint_disabled' };
    let secrets: string[];
    try {
      secrets = job.storedSecrets.map((stored) =>
        openWebhookSecret(keyRing, job.endpointId, stored),
      );
    } catch (error) {
      // Not sent: a key missing from SECRETS_KEYS is the operator's to fix; retried as scheduled.
      const message = error instanceof Error ? error.message : String(error);
      return { kind: 'failure', failure: { errorClass: 'secret_unavailable', message } };
    }
    const sent = await sender.send({ ...job, secrets });
    webhookMetrics.duration.observe({ result: resultLabel(sent) }, sent.latencyMs / 1_000);
    const status = sent.statusCode;
    const delivered = status !== null && status >= 200 && status < 300;
    const gone = status === 410;
    const owned = await recordAttempt(pool, job, {
      startedAt: sent.startedAt,
      statusCode: status,
      latencyMs: sent.latencyMs,
      error: sent.error,
      failed: !delivered && !gone,
    });
    if (!owned) throw new LeaseLostError('webhook', 'complete', job.id);
    if (delivered) return { kind: 'final', final: 'delivered' };
    if (gone) return { kind: 'final', final: 'gone' };
    const notBeforeMs = parseRetryAfterMs(sent.retryAfter, Date.now());
    return {
      kind: 'failure',
      failure: {
        errorClass: sent.errorClass ?? `http_${String(status)}`,
        message: sent.error ?? `HTTP ${String(status)}`,
        ...(notBeforeMs === null ? {} : { notBeforeMs }),
      },
    };
  }

  const handler: JobHandler<ClaimedDelivery, DeliveryFinal> = {
    jobs: WEBHOOK_JOBS,
    claim: (db: Queryable, limit, leaseMs, maxAttempts, busy) =>
      claimDeliveries(db, limit, leaseMs, maxAttempts, deliveryClaimFilter(caps, busy)),
    claimFilter: (busy) => deliveryClaimFilter(caps, busy),
    group: { of: (job) => job.endpointId, cap },
    attempt,
    complete: async (job, final) => {
      if (final === 'delivered') return markDelivered(pool, job);
      if (final === 'gone') {
        logger.warn(
          { endpoint_id: job.endpointId, delivery_id: job.id },
          'webhook endpoint answered 410 Gone; disabled',
        );
        return markFailed(pool, job, { reason: 'gone', disable: 'gone', failingForMs: null });
      }
      return markFailed(pool, job, { reason: final, disable: null, failingForMs: null });
    },
    retryDelayMs: (job, failure) =>
      webhookRetryDelayMs(schedule, job.attempts, failure.notBeforeMs, random),
    giveUp: (job) =>
      markFailed(pool, job, {
        reason: 'attempts_exhausted',
        disable: 'failing',
        failingForMs: scheduleSpanMs(schedule),
      }),
    letter: () => {
      throw new Error('webhook deliveries give up; they are never dead-lettered');
    },
    inSpan: (_job, work) => work(),
    logFields: (job) => ({
      delivery_id: job.id,
      endpoint_id: job.endpointId,
      event_id: job.eventId,
      event_type: job.eventType,
    }),
    onOutcome: (outcome) => {
      webhookMetrics.deliveries.inc({ outcome: toOutcome(outcome) });
    },
  };

  const jobPolicy: JobPolicy = {
    maxAttempts: schedule.length + 1,
    backoffBaseMs: schedule[0] ?? 1_000,
    backoffCapMs: Math.max(...schedule),
    leaseMs: config.WEBHOOK_LEASE_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    pollMs: config.WEBHOOK_POLL_MS,
    outageLogIntervalMs: config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
  };
  const engine = createJobWorker({
    pool,
    logger,
    handler,
    policy: jobPolicy,
    deadLetters: NO_DEAD_LETTERS,
    random,
  });

  return {
    start: engine.start,
    stop: async () => {
      await engine.stop();
      sender.close();
    },
    wake: engine.wake,
    runOnce: async () => (await engine.runOnce()).map(toOutcome),
  };
}

/**
 * Deletes up to `limit` webhook events older than `retentionSeconds` (oldest first), with their
 * deliveries and attempts (ON DELETE CASCADE); an event with a delivery still pending is kept
 * until it ends. Returns how many events were deleted.
 */
export async function reapWebhookEvents(
  pool: Queryable,
  retentionSeconds: number,
  limit: number,
): Promise<number> {
  const { rowCount } = await pool.query({
    name: 'webhook.reap-events',
    text: `DELETE FROM webhook_events
            WHERE event_id IN (
              SELECT e.event_id FROM webhook_events e
               WHERE e.created_at < now() - make_interval(secs => $1::double precision)
                 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                                  WHERE d.event_id = e.event_id AND d.status = 'pending')
               ORDER BY e.created_at LIMIT $2)`,
    values: [retentionSeconds, limit],
  });
  return rowCount ?? 0;
}
