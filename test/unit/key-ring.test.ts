import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';
import { createKeyRing, secretsKeyRing } from '../../src/platform/secrets/key-ring.js';

const keyText = () => randomBytes(32).toString('base64');

function configError(env: Record<string, string>, read?: (path: string) => string): ConfigError {
  try {
    loadConfig(env, read);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the secrets key ring (SECRETS_KEYS)', () => {
  it('when a secret is sealed, then the ciphertext holds no clear text and opens under any key of a ring that has its key', () => {
    const [k0, k1] = [keyText(), keyText()];
    const old = createKeyRing(loadConfig({ SECRETS_KEYS: `k0:${k0}` }).SECRETS_KEYS ?? []);
    const sealed = old.seal('whsec_abc', 'row-1');
    expect(sealed.keyId).toBe('k0');
    expect(sealed.ciphertext.toString('latin1')).not.toContain('whsec_');
    const rotated = loadConfig({ SECRETS_KEYS: `k1:${k1}, k0:${k0}` }).SECRETS_KEYS ?? [];
    const ring = createKeyRing(rotated);
    expect(ring.currentKeyId).toBe('k1');
    expect(ring.open(sealed, 'row-1')).toBe('whsec_abc');
    expect(ring.seal('whsec_abc', 'row-1').keyId).toBe('k1');
  });

  it('when the context, the ciphertext or the key differs, then it does not open', () => {
    const ring = createKeyRing([{ id: 'a', key: randomBytes(32) }]);
    const sealed = ring.seal('whsec_abc', 'row-1');
    expect(() => ring.open(sealed, 'row-2')).toThrow();
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[15] = (flipped[15] ?? 0) ^ 1;
    expect(() => ring.open({ ...sealed, ciphertext: flipped }, 'row-1')).toThrow();
    expect(() => ring.open({ ...sealed, keyId: 'gone' }, 'row-1')).toThrow(
      /"gone", not in the ring/,
    );
    const other = createKeyRing([{ id: 'a', key: randomBytes(32) }]);
    expect(() => other.open(sealed, 'row-1')).toThrow();
  });

  it('when SECRETS_KEYS is malformed, then one line names it and its entry by position, never the key', () => {
    const short = Buffer.alloc(16, 7).toString('base64');
    const error = configError({ SECRETS_KEYS: `k1:${keyText()},k2:${short}` });
    expect(error.variable).toBe('SECRETS_KEYS');
    expect(error.message).toContain('(entry 2 is not)');
    expect(error.message).not.toContain(short);
    const k = keyText();
    expect(configError({ SECRETS_KEYS: `k1:${k},k1:${keyText()}` }).message).toContain(
      'entry 2 repeats an id',
    );
  });

  it('when SECRETS_KEYS_FILE names a file, then its content is the ring; with SECRETS_KEYS too, it is an error', () => {
    const k = keyText();
    const config = loadConfig({ SECRETS_KEYS_FILE: '/run/secrets/keys' }, () => `f1:${k}\n`);
    expect(config.SECRETS_KEYS?.map((entry) => entry.id)).toEqual(['f1']);
    const both = { SECRETS_KEYS: `k:${k}`, SECRETS_KEYS_FILE: '/run/secrets/keys' };
    expect(configError(both, () => '').message).toContain('SECRETS_KEYS_FILE are both set');
  });

  it('when NODE_ENV=production has no key ring or the development key, then it is refused naming SECRETS_KEYS; elsewhere the development key stands in', () => {
    expect(() => secretsKeyRing({ NODE_ENV: 'production' })).toThrow(
      /^invalid configuration: SECRETS_KEYS must be set with NODE_ENV=production/,
    );
    const dev = secretsKeyRing({ NODE_ENV: 'development' });
    expect(dev.currentKeyId).toBe('dev');
    const devKey = Buffer.from('payments-development-key-0000000').toString('base64');
    const production = loadConfig({
      NODE_ENV: 'production',
      SECRETS_KEYS: `mine:${devKey}`,
      DATABASE_URL: 'postgres://u:p@h/db',
      REDIS_URL: 'redis://:p@h:6379',
    });
    expect(() => secretsKeyRing(production)).toThrow(/built-in development key/);
  });
});
