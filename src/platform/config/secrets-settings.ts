import { z } from 'zod';

/** One key of the ring: its id (stored beside every ciphertext) and its 32 bytes. */
export interface SecretKey {
  id: string;
  key: Buffer;
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const FORM =
  'a comma-separated list of id:key, the key base64 of 32 bytes (e.g. k1:<base64>,k0:<base64>)';

/** `id:base64` or undefined; never echoes the entry (it is key material). */
function parseKey(text: string): SecretKey | undefined {
  const colon = text.indexOf(':');
  const id = text.slice(0, colon);
  const encoded = text.slice(colon + 1);
  if (colon < 1 || !KEY_ID.test(id) || !BASE64.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length === 32 ? { id, key } : undefined;
}

/**
 * The key ring, newest first: the first key encrypts, every key decrypts. A refusal names the
 * entry by its position only, never by its text.
 */
export const keyRingSetting = z.string().transform((value, context): SecretKey[] => {
  const texts = value
    .split(',')
    .map((text) => text.trim())
    .filter((text) => text !== '');
  const keys: SecretKey[] = [];
  for (const [index, text] of texts.entries()) {
    const key = parseKey(text);
    if (key === undefined || keys.some((other) => other.id === key.id)) {
      const why = key === undefined ? 'is not' : 'repeats an id';
      context.addIssue({ code: 'custom', message: `must be ${FORM} (entry ${index + 1} ${why})` });
      return z.NEVER;
    }
    keys.push(key);
  }
  if (keys.length === 0) {
    context.addIssue({ code: 'custom', message: `must be ${FORM}, with at least one key` });
    return z.NEVER;
  }
  return keys;
});

/** Encryption of stored secrets (part of configSchema; DESIGN 113). */
export const secretsSettings = {
  SECRETS_KEYS: keyRingSetting
    .optional()
    .describe(
      'Key ring encrypting webhook signing secrets at rest, `id:<base64 32 bytes>` comma-separated, newest (the encrypting one) first; or `SECRETS_KEYS_FILE` naming a file that holds it. Required with NODE_ENV=production by the api and webhooks roles; unset elsewhere: a built-in development key.',
    ),
};
