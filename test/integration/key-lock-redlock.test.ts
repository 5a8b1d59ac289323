import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis, type Command } from 'ioredis';
import type { Lock } from 'redlock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createKeyLocks,
  createKeyRedlock,
  inFlightMarkerKey,
  keyLockKey,
} from '../../src/idempotency/key-lock.js';
import type { RedisClient } from '../../src/platform/redis/redis.js';
import { deleteKeysWithPrefix, uniqueSuffix } from '../support/isolation.js';
import { testRedisClient } from '../support/test-redis-client.js';

let redis: RedisClient;
const prefix = `test:${uniqueSuffix()}:`;
const merchantId = randomUUID();
const lockKey = (key: string) => keyLockKey(prefix, merchantId, key);
const inFlightKey = (key: string) => inFlightMarkerKey(prefix, merchantId, key);

beforeAll(() => {
  redis = testRedisClient();
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

/** The commands `client` sends from now on, by name (not the connection's own CLIENT SETINFO). */
function recordCommands(client: RedisClient): string[] {
  const sent: string[] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    if (command.name.toLowerCase() !== 'client') sent.push(command.name.toLowerCase());
    return (send as (c: Command, ...r: unknown[]) => unknown)(command, ...rest);
  };
  return sent;
}

/** Key locks whose Redlock hands out the locks it takes, to compare with what Redis holds. */
function locksWithRedlock(client: RedisClient, ttlMs = 5_000) {
  const redlock = createKeyRedlock(client);
  const taken: Lock[] = [];
  const acquire = redlock.acquire.bind(redlock);
  vi.spyOn(redlock, 'acquire').mockImplementation(async (resources, duration, settings) => {
    const lock = await acquire(resources, duration, settings);
    taken.push(lock);
    return lock;
  });
  return { redlock, taken, locks: createKeyLocks(client, prefix, ttlMs, Date.now, redlock) };
}

describe('key locks are Redlock locks (real Redis)', () => {
  it('when a claim takes a key, then Redis holds the Redlock lock value and the in-flight marker holds the fingerprint', async () => {
    const { locks, taken } = locksWithRedlock(redis);
    expect((await locks.claim(merchantId, 'k-value', 'f1')).kind).toBe('acquired');
    expect(taken).toHaveLength(1);
    expect(taken[0]?.value).toMatch(/^[0-9a-f]{32}$/);
    expect(await redis.get(lockKey('k-value'))).toBe(taken[0]?.value);
    expect(await redis.get(inFlightKey('k-value'))).toBe('f1');
    expect(await redis.pttl(inFlightKey('k-value'))).toBeGreaterThan(0);
  });

  it('when a key is held, then a duplicate is refused by Redlock and sees the holder (same body: wait/409, other body: 422)', async () => {
    const { locks, taken } = locksWithRedlock(redis);
    await locks.claim(merchantId, 'k-dup', 'f1');
    expect(await locks.claim(merchantId, 'k-dup', 'f1')).toEqual({
      kind: 'held',
      holderFingerprint: 'f1',
    });
    expect(await locks.claim(merchantId, 'k-dup', 'f2')).toEqual({
      kind: 'held',
      holderFingerprint: 'f1',
    });
    expect(taken).toHaveLength(1); // the refused acquires returned no lock
    expect(await redis.get(lockKey('k-dup'))).toBe(taken[0]?.value);
  });

  it("when Redlock releases a lock, then it deletes lock and marker, and never another holder's", async () => {
    const { locks, taken, redlock } = locksWithRedlock(redis);
    await locks.claim(merchantId, 'k-own', 'f1');
    await redis.set(lockKey('k-own'), 'someone-else'); // as if it expired and was retaken
    await expect(redlock.release(taken[0] as Lock)).rejects.toThrow();
    expect(await redis.get(lockKey('k-own'))).toBe('someone-else');
    await redis.del(lockKey('k-own'));
    const attempt = await locks.claim(merchantId, 'k-own', 'f2');
    if (attempt.kind !== 'acquired') throw new Error(`expected the lock, got ${attempt.kind}`);
    await attempt.release();
    expect(await redis.exists(lockKey('k-own'), inFlightKey('k-own'))).toBe(0);
  });

  it('when a claim is refused, then two commands: the acquire and the read of which (no clean-up release)', async () => {
    const client = testRedisClient();
    try {
      const { locks } = locksWithRedlock(client);
      await locks.claim(merchantId, 'k-count', 'f1');
      await locks.claim(merchantId, 'k-count', 'f1'); // scripts loaded either way
      const sent = recordCommands(client);
      expect((await locks.claim(merchantId, 'k-count', 'f2')).kind).toBe('held');
      expect(sent).toEqual(['evalsha', 'evalsha']);
    } finally {
      client.disconnect();
    }
  });
});

describe('key locks when Redis fails', () => {
  let server: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // Accepts connections and never answers: a frozen Redis.
    server = createServer((socket) => sockets.push(socket)).listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
    await once(server, 'close');
  });

  it('when Redis never answers, then the claim rejects with the command timeout after one command', async () => {
    const { port } = server.address() as AddressInfo;
    const frozen = new Redis({
      port,
      host: '127.0.0.1',
      commandTimeout: 100,
      maxRetriesPerRequest: 0,
      enableReadyCheck: false,
      retryStrategy: () => null,
    });
    try {
      const sent = recordCommands(frozen);
      const { locks } = locksWithRedlock(frozen);
      await expect(locks.claim(merchantId, 'k-frozen', 'f1')).rejects.toThrow('Command timed out');
      expect(sent).toEqual(['evalsha']);
    } finally {
      frozen.disconnect();
    }
  });

  it('when Redis refuses connections, then the claim rejects with the client error, not a lock refusal', async () => {
    const down = new Redis({
      port: 1,
      host: '127.0.0.1',
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    try {
      const { locks } = locksWithRedlock(down);
      await expect(locks.claim(merchantId, 'k-down', 'f1')).rejects.toThrow(/writeable|connect/i);
    } finally {
      down.disconnect();
    }
  });
});
