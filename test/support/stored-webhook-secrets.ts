import type pg from 'pg';
import { loadConfig } from '../../src/platform/config/config.js';
import { createKeyRing } from '../../src/platform/secrets/key-ring.js';
import {
  openWebhookSecret,
  storedSecretOf,
  type StoredSecretColumns,
} from '../../src/webhooks/webhook-secret.js';
import { TEST_SECRETS_KEYS } from './isolation.js';

/** This test file's key ring (TEST_SECRETS_KEYS), as the API and the webhooks role build it. */
export const testKeyRing = createKeyRing(
  loadConfig({ SECRETS_KEYS: TEST_SECRETS_KEYS }).SECRETS_KEYS ?? [],
);

/**
 * An endpoint's stored secrets, oldest first, each opened with the test key ring, with whether
 * it is held in clear and when it expired (`expired`: null while current).
 */
export async function storedWebhookSecrets(
  pool: pg.Pool,
  endpointId: string,
): Promise<{ secret: string; clear: boolean; expired: boolean | null }[]> {
  const { rows } = await pool.query<StoredSecretColumns & { expired: boolean | null }>(
    `SELECT secret, secret_ciphertext, secret_key_id, expires_at <= now() AS expired
       FROM webhook_endpoint_secrets WHERE endpoint_id = $1 ORDER BY created_at`,
    [endpointId],
  );
  return rows.map((row) => ({
    secret: openWebhookSecret(testKeyRing, endpointId, storedSecretOf(row)),
    clear: row.secret !== null,
    expired: row.expired,
  }));
}
