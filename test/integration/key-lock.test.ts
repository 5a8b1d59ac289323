import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createKeyLocks,
  inFlightMarkerKey,
  keyLockKey,
  type ClaimAttempt,
} from '../../src/idempotency/key-lock.js';
import { createResponseCache } from '../../src/idempotency/response-cache.js';
import type { StoredResponse } from '../../src/idempotency/stored-response.js';
import type { RedisClient } from '../../src/platform/redis/redis.js';
import { redisScript } from '../../src/platform/redis/redis-script.js';
import { deleteKeysWithPrefix, uniqueSuffix } from '../support/isolation.js';
import { testRedisClient } from '../support/test-redis-client.js';

let redis: RedisClient;
const prefix = `test:${uniqueSuffix()}:`;
beforeAll(() => {
  redis = testRedisClient();
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

const merchantId = randomUUID();
const response = (over: Partial<StoredResponse> = {}): StoredResponse => ({
  paymentId: randomUUID(),
  fingerprint: 'ab'.repeat(32),
  status: 202,
  body: '{"id":"x","description":"two words\\nand a line"}',
  expiresAt: new Date(Date.now() + 60_000),
  ...over,
});

function acquired(attempt: ClaimAttempt) {
  if (attempt.kind !== 'acquired') throw new Error(`expected the lock, got ${attempt.kind}`);
  return attempt;
}

describe('key locks (real Redis): the cache check and the lock in one command', () => {
  // Built lazily: `redis` exists once beforeAll has run.
  const lockFor = () => createKeyLocks(redis, prefix, 5_000);

  it('when a key is new, then the first claim takes the lock and a second sees it held with the first fingerprint', async () => {
    const l = lockFor();
    const first = await l.claim(merchantId, 'k-new', 'f1');
    expect(first.kind).toBe('acquired');
    expect(await l.claim(merchantId, 'k-new', 'f2')).toEqual({
      kind: 'held',
      holderFingerprint: 'f1',
    });
  });

  it('when the holder completes, then the next claim is the cached response, byte for byte, and the lock is gone', async () => {
    const l = lockFor();
    const stored = response({ refundId: randomUUID() });
    await acquired(await l.claim(merchantId, 'k-done', stored.fingerprint)).complete(stored);
    expect(await l.claim(merchantId, 'k-done', 'other')).toEqual({
      kind: 'cached',
      response: stored,
    });
    expect(await redis.exists(keyLockKey(prefix, merchantId, 'k-done'))).toBe(0);
    expect(await redis.exists(inFlightMarkerKey(prefix, merchantId, 'k-done'))).toBe(0);
    // The cache read by itself (the in-flight twin's poll) sees the same entry.
    const cache = createResponseCache(redis, prefix);
    expect(await cache.get(merchantId, 'k-done')).toEqual(stored);
  });

  it('when a lock expired and another request took it, then the first release leaves the new holder alone', async () => {
    const l = lockFor();
    const first = acquired(await l.claim(merchantId, 'k-expired', 'f1'));
    await redis.del(keyLockKey(prefix, merchantId, 'k-expired')); // as if its TTL ran out
    const second = acquired(await l.claim(merchantId, 'k-expired', 'f2'));
    await first.release();
    expect(await l.claim(merchantId, 'k-expired', 'f3')).toEqual({
      kind: 'held',
      holderFingerprint: 'f2',
    });
    await second.release();
    expect((await l.claim(merchantId, 'k-expired', 'f4')).kind).toBe('acquired');
  });

  it('when a write fails and the holder releases, then the key is free again and nothing is cached', async () => {
    const l = lockFor();
    await acquired(await l.claim(merchantId, 'k-failed', 'f1')).release();
    expect((await l.claim(merchantId, 'k-failed', 'f1')).kind).toBe('acquired');
  });

  it('when a cached entry has expired by the clock, then the claim is a miss and takes the lock', async () => {
    const l = lockFor();
    const stored = response({ expiresAt: new Date(Date.now() + 60_000) });
    await acquired(await l.claim(merchantId, 'k-old', stored.fingerprint)).complete(stored);
    const later = createKeyLocks(redis, prefix, 5_000, () => Date.now() + 120_000);
    expect((await later.claim(merchantId, 'k-old', stored.fingerprint)).kind).toBe('acquired');
  });

  it('when the lock TTL passes, then the key can be claimed again', async () => {
    const short = createKeyLocks(redis, prefix, 50);
    acquired(await short.claim(merchantId, 'k-ttl', 'f1'));
    await expect
      .poll(async () => (await short.claim(merchantId, 'k-ttl', 'f2')).kind, { interval: 20 })
      .toBe('acquired');
  });
});

describe('redis scripts', () => {
  it('when Redis does not know a script yet, then it is sent whole once and by its hash after', async () => {
    // A source no other run has loaded: the first EVALSHA meets NOSCRIPT.
    const script = redisScript(`-- ${randomUUID()}\nreturn ARGV[1] .. KEYS[1]`);
    expect(await script.run(redis, ['b'], ['a'])).toBe('ab');
    expect(await script.run(redis, ['d'], ['c'])).toBe('cd');
  });
});
