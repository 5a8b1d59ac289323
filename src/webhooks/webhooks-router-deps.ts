import type { CreateOnce } from '../idempotency/idempotent-create.js';
import type { MerchantGateDeps } from '../merchants/merchant-gate.js';
import type { Config } from '../platform/config/config.js';
import type { Pool } from '../platform/database/db.js';
import type { KeyRing } from '../platform/secrets/key-ring.js';
import type { AddressPolicy } from './address-policy.js';

/** What the webhook routes need (webhooks-router.ts wires them). */
export interface WebhooksRouterDeps extends MerchantGateDeps {
  db: Pool;
  /** The idempotency layer (the same as payments' and refunds'): creates and replays. */
  createOnce: CreateOnce;
  /** Where endpoints may point (WEBHOOK_ALLOWED_NETWORKS). */
  addressPolicy: AddressPolicy;
  /** Seals new signing secrets (create, rotate) and opens one for a replayed create. */
  keyRing: KeyRing;
  config: Pick<
    Config,
    | 'WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT'
    | 'WEBHOOK_SECRET_GRACE_SECONDS'
    | 'WEBHOOK_REPLAY_MAX_EVENTS'
    | 'IDEMPOTENCY_KEY_TTL_SECONDS'
  >;
  bodyLimitBytes: number;
}
