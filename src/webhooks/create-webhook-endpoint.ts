import { v7 as uuidv7 } from 'uuid';
import { ApiError } from '../http/api-error.js';
import { codePoints } from '../http/code-points.js';
import { requestFingerprint } from '../idempotency/fingerprint.js';
import type { CreateOnce } from '../idempotency/idempotent-create.js';
import type { CreateOutcome } from '../idempotency/replay-stored-response.js';
import type { Config } from '../platform/config/config.js';
import type { Pool } from '../platform/database/db.js';
import type { KeyRing } from '../platform/secrets/key-ring.js';
import type { AddressPolicy } from './address-policy.js';
import {
  endpointLimitReached,
  findCreatedSecret,
  insertEndpoint,
  type InsertEndpointResult,
} from './webhook-endpoint-repository.js';
import {
  MAX_WEBHOOK_URL_LENGTH,
  WEBHOOK_URL_PATTERN,
  type CreateWebhookEndpointBody,
} from './webhook-endpoint-schemas.js';
import { toWebhookEndpointResource } from './webhook-resource.js';
import { newWebhookSecret, openWebhookSecret, sealWebhookSecret } from './webhook-secret.js';

export interface WebhookEndpointServiceDeps {
  pool: Pool;
  createOnce: CreateOnce;
  addressPolicy: AddressPolicy;
  /** Seals the new secret (SECRETS_KEYS) and opens it for a replay. */
  keyRing: KeyRing;
  config: Pick<Config, 'WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT' | 'IDEMPOTENCY_KEY_TTL_SECONDS'>;
}

/** A refusal of the url: 422 webhook_url_not_allowed naming the rule. */
function urlRefused(detail: string, message: string): ApiError {
  return new ApiError('webhook_url_not_allowed', detail, { errors: [{ path: 'url', message }] });
}

/** No unpaired surrogate: Postgres would store U+FFFD instead of what was sent. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * 422 unless the URL may receive deliveries: at most 2048 characters, http(s):// with no space
 * or control character (WEBHOOK_URL_PATTERN, as the document states), well-formed Unicode, no
 * userinfo, and every address its host resolves to public (or in WEBHOOK_ALLOWED_NETWORKS).
 */
export async function assertUrlAllowed(policy: AddressPolicy, url: string): Promise<void> {
  if (codePoints(url) > MAX_WEBHOOK_URL_LENGTH) {
    const rule = `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
    throw urlRefused(`The url ${rule}.`, rule);
  }
  if (LONE_SURROGATE.test(url)) {
    throw urlRefused('The url has an unpaired surrogate.', 'must not contain unpaired surrogates');
  }
  if (!WEBHOOK_URL_PATTERN.test(url)) {
    const rule = 'must be http(s):// without spaces or control characters';
    throw urlRefused(`The url ${rule}.`, rule);
  }
  const verdict = await policy.checkUrl(url);
  if (!verdict.ok) throw urlRefused(`The url is refused: ${verdict.reason}.`, verdict.reason);
}

/** The 201 body: the endpoint and its secret, or `secret: null` (what is stored and cached). */
function createdBody(resource: object, secret: string | null): string {
  return JSON.stringify({ ...resource, secret });
}

/**
 * POST /webhook_endpoints: the endpoint limit checked, the URL checked, then the endpoint and its
 * sealed secret written once per Idempotency-Key when one is sent (the same idempotency layer as
 * POST /payments), or simply written when none is. The stored answer (idempotency_keys and its
 * Redis copy) has `secret: null`: the answer sent shows the secret, and a replay shows it again,
 * opened from webhook_endpoint_secrets, while it is the endpoint's current secret; once it was
 * rotated or the endpoint deleted, a replay answers the stored 201 with `secret: null` (DESIGN 114).
 */
export function createWebhookEndpointService(deps: WebhookEndpointServiceDeps) {
  const { pool, config } = deps;
  return async function createWebhookEndpoint(
    merchantId: string,
    key: string | undefined,
    body: CreateWebhookEndpointBody,
  ): Promise<CreateOutcome> {
    const max = config.WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT;
    // The limit first: a merchant at it cannot make the service resolve a host name.
    if (await endpointLimitReached(pool, merchantId, max, key)) {
      refuseOverLimit({ kind: 'limit_reached' }, max);
    }
    await assertUrlAllowed(deps.addressPolicy, body.url);
    const id = uuidv7();
    const createdAt = new Date();
    const secret = newWebhookSecret();
    const resource = toWebhookEndpointResource({
      id,
      url: body.url,
      enabled_events: body.enabled_events,
      description: body.description ?? null,
      disabled_at: body.disabled ? createdAt : null,
      disabled_reason: body.disabled ? 'merchant' : null,
      failing_since: null,
      created_at: createdAt,
      updated_at: createdAt,
    });
    const stored = createdBody(resource, null);
    const answer = createdBody(resource, secret);
    const endpoint = {
      id,
      merchantId,
      url: body.url,
      description: body.description ?? null,
      enabledEvents: body.enabled_events,
      disabled: body.disabled,
      secret: sealWebhookSecret(deps.keyRing, id, secret),
      createdAt,
    };
    if (key === undefined) {
      refuseOverLimit(await insertEndpoint(pool, endpoint, max), max);
      return { status: 201, body: answer, replayed: false };
    }
    const fingerprint = requestFingerprint('POST', '/webhook_endpoints', body);
    const outcome = await deps.createOnce(merchantId, key, fingerprint, async () => {
      const ttlSeconds = config.IDEMPOTENCY_KEY_TTL_SECONDS;
      const result = await insertEndpoint(pool, endpoint, max, {
        key,
        fingerprint,
        body: stored,
        ttlSeconds,
      });
      if (result.kind === 'key_taken') return null;
      refuseOverLimit(result, max);
      return {
        fingerprint: fingerprint.toString('hex'),
        status: 201,
        body: stored,
        expiresAt: (result.kind === 'created' ? result.expiresAt : null) ?? createdAt,
      };
    });
    if (!outcome.replayed) return { ...outcome, body: answer };
    return { ...outcome, body: await replayedBody(deps, merchantId, outcome.body) };
  };
}

/**
 * A replay's body: the stored one with the secret the endpoint was created with while it is
 * still current, else `secret: null`. A body stored before DESIGN 114 (secret in clear) is
 * answered the same way.
 */
async function replayedBody(
  deps: Pick<WebhookEndpointServiceDeps, 'pool' | 'keyRing'>,
  merchantId: string,
  body: string,
): Promise<string> {
  const resource = JSON.parse(body) as { id?: unknown };
  if (typeof resource.id !== 'string') return createdBody(resource, null);
  const stored = await findCreatedSecret(deps.pool, merchantId, resource.id);
  const secret = stored === null ? null : openWebhookSecret(deps.keyRing, resource.id, stored);
  return createdBody(resource, secret);
}

function refuseOverLimit(result: InsertEndpointResult, max: number): void {
  if (result.kind === 'limit_reached') {
    throw new ApiError(
      'webhook_endpoint_limit',
      `A merchant may have at most ${max} webhook endpoints; delete one first.`,
    );
  }
}

export type CreateWebhookEndpoint = ReturnType<typeof createWebhookEndpointService>;
