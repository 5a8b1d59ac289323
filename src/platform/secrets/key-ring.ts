import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../config/config-error.js';
import type { SecretKey } from '../config/secrets-settings.js';

/** A secret sealed under one key of the ring: what is stored instead of the secret. */
export interface Sealed {
  keyId: string;
  /** 12-byte nonce, then the AES-256-GCM ciphertext, then its 16-byte tag. */
  ciphertext: Buffer;
}

/**
 * AES-256-GCM under a ring of keys: `seal` uses the newest (the first), `open` whichever key id
 * the sealed value names. `context` is bound as additional data (e.g. the row's id), so a
 * ciphertext copied to another row does not open there.
 */
export interface KeyRing {
  /** The id of the key `seal` uses. */
  readonly currentKeyId: string;
  seal: (plaintext: string, context: string) => Sealed;
  /** Throws when the key id is not in the ring or the ciphertext or context does not match. */
  open: (sealed: Sealed, context: string) => string;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The key used when SECRETS_KEYS is unset outside production: published here, so it protects
 * nothing but keeps the local tools and tests that start a role without a key ring working.
 * NODE_ENV=production refuses it (secretsKeyRing).
 */
export const DEVELOPMENT_KEYS: readonly SecretKey[] = [
  { id: 'dev', key: Buffer.from('payments-development-key-0000000', 'utf8') },
];

export function createKeyRing(keys: readonly SecretKey[]): KeyRing {
  const [current] = keys;
  if (current === undefined) throw new Error('a key ring needs at least one key');
  const byId = new Map(keys.map((entry) => [entry.id, entry.key]));
  return {
    currentKeyId: current.id,
    seal(plaintext, context) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, nonce);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return { keyId: current.id, ciphertext: Buffer.concat([nonce, body, cipher.getAuthTag()]) };
    },
    open({ keyId, ciphertext }, context) {
      const key = byId.get(keyId);
      if (key === undefined) throw new Error(`secret sealed under key "${keyId}", not in the ring`);
      if (ciphertext.length < NONCE_BYTES + TAG_BYTES) throw new Error('sealed secret too short');
      const decipher = createDecipheriv('aes-256-gcm', key, ciphertext.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_BYTES));
      const body = ciphertext.subarray(NONCE_BYTES, ciphertext.length - TAG_BYTES);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The ring of SECRETS_KEYS (or SECRETS_KEYS_FILE). Unset: ConfigError with NODE_ENV=production,
 * the built-in development key otherwise; production refuses that key by id too.
 */
export function secretsKeyRing(config: {
  NODE_ENV: string;
  SECRETS_KEYS?: readonly SecretKey[] | undefined;
}): KeyRing {
  const production = config.NODE_ENV === 'production';
  if (config.SECRETS_KEYS === undefined && production) {
    throw new ConfigError(
      'SECRETS_KEYS',
      'must be set with NODE_ENV=production (or SECRETS_KEYS_FILE): the key ring that encrypts webhook signing secrets',
    );
  }
  const keys = config.SECRETS_KEYS ?? DEVELOPMENT_KEYS;
  if (
    production &&
    keys.some((entry) => DEVELOPMENT_KEYS.some((dev) => dev.key.equals(entry.key)))
  ) {
    throw new ConfigError(
      'SECRETS_KEYS',
      'holds the built-in development key, refused with NODE_ENV=production',
    );
  }
  return createKeyRing(keys);
}
