import { randomBytes } from 'node:crypto';
import type { KeyRing, Sealed } from '../platform/secrets/key-ring.js';

/** A new signing secret: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * A secret as webhook_endpoint_secrets holds it: sealed (secret_ciphertext + secret_key_id), or
 * in clear (`secret`) when written before migration 0031 or by the previous release during an
 * upgrade, until `npm run secrets:reencrypt` seals it.
 */
export interface StoredSecret {
  clear: string | null;
  sealed: Sealed | null;
}

/** The additional data a secret is sealed with: its endpoint, so it opens on that row only. */
function sealContext(endpointId: string): string {
  return `webhook_endpoint_secrets:${endpointId}`;
}

export function sealWebhookSecret(ring: KeyRing, endpointId: string, secret: string): Sealed {
  return ring.seal(secret, sealContext(endpointId));
}

/** The secret in clear; throws when its key is not in the ring or it does not open. */
export function openWebhookSecret(ring: KeyRing, endpointId: string, stored: StoredSecret): string {
  if (stored.sealed !== null) return ring.open(stored.sealed, sealContext(endpointId));
  if (stored.clear !== null) return stored.clear;
  throw new Error(`webhook endpoint ${endpointId} has a secret row with no secret`);
}

/** The columns of a stored secret, as `SELECT secret, secret_ciphertext, secret_key_id` reads them. */
export interface StoredSecretColumns {
  secret: string | null;
  secret_ciphertext: Buffer | null;
  secret_key_id: string | null;
}

export function storedSecretOf(row: StoredSecretColumns): StoredSecret {
  const sealed =
    row.secret_ciphertext !== null && row.secret_key_id !== null
      ? { keyId: row.secret_key_id, ciphertext: row.secret_ciphertext }
      : null;
  return { clear: row.secret, sealed };
}
