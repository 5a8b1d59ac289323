import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiRedisProbes } from '../../src/apps/api/redis-needs.js';
import {
  fingerprintCarrier,
  inFlightMarkerKey,
  keyLockKey,
} from '../../src/idempotency/key-lock.js';
import { responseCacheKey } from '../../src/idempotency/response-cache.js';
import { rateBucketKey } from '../../src/rate-limits/rate-limiter.js';

/** CRC16-CCITT (XModem), as Redis Cluster computes it. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/** A key's Cluster slot: of its hash tag (the first non-empty `{...}`) when it has one. */
function slot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(new TextEncoder().encode(hashed)) % 16_384;
}

const slots = (keys: readonly string[]) => new Set(keys.map(slot));

describe('Redis Cluster hash tags (DESIGN 123)', () => {
  it('when the slot function is checked against Redis, then it gives the slots Redis documents', () => {
    expect(slot('123456789')).toBe(0x31c3 % 16_384); // the CRC16 check value
    expect(slot('foo')).toBe(12182); // CLUSTER KEYSLOT foo
    expect(slot('{user1000}.following')).toBe(slot('{user1000}.followers'));
  });

  const prefix = 'payments:';
  const merchant = randomUUID();
  const key = 'order-42:retry {1}';
  const lock = keyLockKey(prefix, merchant, key);
  const inFlight = inFlightMarkerKey(prefix, merchant, key);
  const response = responseCacheKey(prefix, merchant, key);
  const carrier = fingerprintCarrier(prefix, merchant, 'ab'.repeat(32));
  const bucket = rateBucketKey(prefix, 'merchant', 'standard', merchant);

  it.each([
    ['claim (acquire)', [lock, inFlight, carrier, response]],
    ['acquire', [lock, inFlight, carrier]],
    ['release / extend', [lock, inFlight]],
    ['complete', [response, lock, inFlight]],
    ['inspect', [response, inFlight]],
    ['rate limit and peek', [bucket, response]],
  ])('when the %s script runs, then all its keys are in one slot', (_, keys) => {
    expect(slots(keys).size).toBe(1);
  });

  it("when the API's start-up probes run a multi-key command, then its keys share a slot", () => {
    for (const [command, ...args] of apiRedisProbes(prefix, true)) {
      const keys =
        command === 'eval' || command === 'evalsha'
          ? args.slice(2, 2 + Number(args[1]))
          : command === 'del'
            ? args
            : [];
      expect(slots(keys.map(String)).size).toBeLessThanOrEqual(1);
    }
  });

  it('when the keys are named, then REDIS_KEY_PREFIX still comes first (the ACL patterns match)', () => {
    for (const name of [lock, inFlight, response, carrier]) expect(name).toMatch(/^payments:idem:/);
    expect(bucket).toMatch(/^payments:rl:merchant:standard:\{/);
  });

  it('when many merchants use the service, then their keys spread over the slots', () => {
    const merchants = Array.from({ length: 200 }, () => randomUUID());
    const used = new Set(merchants.map((id) => slot(responseCacheKey(prefix, id, 'k'))));
    expect(used.size).toBeGreaterThan(190);
  });
});
