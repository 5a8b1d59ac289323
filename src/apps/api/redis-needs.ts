import { createHash } from 'node:crypto';
import { inFlightMarkerKey, keyLockKey } from '../../idempotency/key-lock.js';
import { responseCacheKey } from '../../idempotency/response-cache.js';
import type { RedisProbe } from '../../platform/redis/redis-permissions.js';
import { rateBucketPrefix } from '../../rate-limits/rate-limiter.js';

/**
 * Every Redis command the API sends, directly or inside its scripts (key-lock.ts, response-cache.ts,
 * rate-limiter.ts; ioredis' INFO ready check, PING for readiness). payments_api's ACL grants
 * exactly these (scripts/redis/acl-users.sh; test/unit/redis-acl.test.ts keeps them equal).
 */
export const API_REDIS_COMMANDS = [
  'ping',
  'info',
  'get',
  'set',
  'eval',
  'evalsha',
  'exists',
  'del',
  'pexpire',
  'time',
  'hmget',
  'hset',
] as const;

/** Not a merchant id (those are UUIDs): the probe's keys never meet a real one's. */
const PROBE = 'boot-probe';
const PROBE_SCRIPT = 'return 1';
const TTL_MS = 10_000;

/**
 * The API's start-up check of its Redis user (run-roles.ts): each command on a throwaway key of
 * each pattern it uses (response cache, lock, in-flight marker, rate-limit bucket), the script
 * calls by text and by hash. A NOPERM names what the user lacks.
 */
export function apiRedisProbes(prefix: string): RedisProbe[] {
  const response = responseCacheKey(prefix, PROBE, PROBE);
  const lock = keyLockKey(prefix, PROBE, PROBE);
  const inFlight = inFlightMarkerKey(prefix, PROBE, PROBE);
  const bucket = `${rateBucketPrefix(prefix, PROBE, PROBE)}:${PROBE}`;
  const sha = createHash('sha1').update(PROBE_SCRIPT).digest('hex');
  return [
    ['ping'],
    ['info', 'server'],
    ['time'],
    ['eval', PROBE_SCRIPT, 0],
    ['evalsha', sha, 0],
    ['set', response, PROBE, 'PX', TTL_MS],
    ['get', response],
    ['exists', response],
    ['del', response],
    ['set', lock, PROBE, 'NX', 'PX', TTL_MS],
    ['set', inFlight, PROBE, 'PX', TTL_MS],
    ['get', lock],
    ['get', inFlight],
    ['pexpire', lock, TTL_MS],
    ['pexpire', inFlight, TTL_MS],
    ['del', lock, inFlight],
    ['hset', bucket, 'tokens', '0', 'at', '0'],
    ['hmget', bucket, 'tokens', 'at'],
    ['pexpire', bucket, TTL_MS],
    ['del', bucket],
  ];
}
