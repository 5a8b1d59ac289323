import { createHash, randomBytes } from 'node:crypto';

/**
 * Recognisable in logs and secret scanners; the rest is 256 random bits. A secret key ("sk_")
 * may do everything, a restricted key ("rk_") only its scopes (api-key-scopes.ts). The prefix
 * tells people which is which; what a key may do is decided by its row (scopes), never by it.
 */
export type ApiKeyKind = 'secret' | 'restricted';
const API_KEY_PREFIX: Readonly<Record<ApiKeyKind, string>> = { secret: 'sk_', restricted: 'rk_' };

/**
 * Characters of a key shown for display, at each end: "sk_" (or "rk_") and four random
 * characters, and the last four. The 35 hidden characters still hold 210 random bits.
 */
const DISPLAY_PREFIX_LENGTH = 3 + 4;
const DISPLAY_SUFFIX_LENGTH = 4;

/** Every key this service has issued: "sk_" or "rk_" and 32 random bytes in base64url (43 characters). */
const API_KEY_FORMAT = /^[sr]k_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(kind: ApiKeyKind = 'secret'): string {
  return `${API_KEY_PREFIX[kind]}${randomBytes(32).toString('base64url')}`;
}

/**
 * Keys are stored only as SHA-256. They are 256-bit random secrets, so a slow password hash
 * adds nothing against guessing and would put a CPU-heavy step on every request.
 */
export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey).digest();
}

/**
 * True for a string shaped like a key this service issues. Anything else cannot be a live key
 * (every key ever stored was made by generateApiKey, migrated ones included), so it is refused
 * without a database lookup.
 */
export function isWellFormedApiKey(value: string): boolean {
  return API_KEY_FORMAT.test(value);
}

/**
 * The public part of a presented key, as `merchant:key list` shows it ("sk_" and four
 * characters): failed authentications are counted per prefix as well as per address, so many
 * addresses guessing at one key are limited together. Any string has one (its first characters).
 */
export function apiKeyPrefix(presented: string): string {
  return presented.slice(0, DISPLAY_PREFIX_LENGTH);
}

/** What may be shown of a key after its creation: enough to tell keys apart, not to use one. */
export function displayParts(apiKey: string): { prefix: string; lastFour: string } {
  return {
    prefix: apiKeyPrefix(apiKey),
    lastFour: apiKey.slice(-DISPLAY_SUFFIX_LENGTH),
  };
}
