import { testRedisClient } from '../support/test-redis-client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestRedis, type TestRedis } from '../support/isolation.js';

let a: TestRedis;
let b: TestRedis;
beforeAll(async () => {
  [a, b] = await Promise.all([createTestRedis(), createTestRedis()]);
});
afterAll(async () => {
  await Promise.all([a.cleanup(), b.cleanup()]);
});

describe('redis (real server, per-file key prefix)', () => {
  it('when a value is set with a TTL, then it reads back and expires', async () => {
    await a.redis.set('greeting', 'hello', 'PX', 200);
    expect(await a.redis.get('greeting')).toBe('hello');
    const ttl = await a.redis.pttl('greeting');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(200);
  });

  it('when two prefixes use the same key, then neither sees the other', async () => {
    await a.redis.set('shared-name', 'from a');
    await b.redis.set('shared-name', 'from b');
    expect(await a.redis.get('shared-name')).toBe('from a');
    expect(await b.redis.get('shared-name')).toBe('from b');
  });

  it('when cleanup runs, then only that prefix is removed', async () => {
    const other = await createTestRedis();
    await other.redis.set('k', 'v');
    await a.redis.set('survivor', 'yes');
    await other.cleanup();
    expect(await a.redis.get('survivor')).toBe('yes');
    const raw = testRedisClient();
    expect(await raw.exists(`${other.prefix}k`)).toBe(0);
    raw.disconnect();
  });
});
