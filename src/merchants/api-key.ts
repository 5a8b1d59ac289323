import { createHash, randomBytes } from 'node:crypto';

/** Recognisable in logs and secret scanners; the rest is 256 random bits. */
const API_KEY_PREFIX = 'sk_';

export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/**
 * Keys are stored only as SHA-256. They are 256-bit random secrets, so a slow password hash
 * adds nothing against guessing and would put a CPU-heavy step on every request.
 */
export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey).digest();
}
