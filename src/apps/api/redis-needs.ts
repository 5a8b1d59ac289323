import { createHash } from 'node:crypto';
import { fingerprintCarrier, inFlightMarkerKey, keyLockKey } from '../../idempotency/key-lock.js';
import { responseCacheKey } from '../../idempotency/response-cache.js';
import type { RedisProbe } from '../../platform/redis/redis-permissions.js';
import { rateBucketKey } from '../../rate-limits/rate-limiter.js';

/**
 * Every Redis command the API sends, directly or inside its scripts (key-lock.ts, response-cache.ts,
 * rate-limiter.ts; ioredis' INFO ready check, PING for readiness; a Cluster client's CLUSTER INFO
 * ready check and CLUSTER SLOTS map, DESIGN 123). payments_api's ACL grants
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
  'cluster|info',
  'cluster|slots',
] as const;

/** Not a merchant id (those are UUIDs): the probe's keys never meet a real one's. */
const PROBE = 'boot-probe';
/** A fingerprint's shape (SHA-256 hex), carried in a claim's KEYS. */
const PROBE_FINGERPRINT = '0'.repeat(64);
const PROBE_SCRIPT = 'return 1';
const TTL_MS = 10_000;
const CLUSTER_PROBES: RedisProbe[] = [
  ['cluster', 'info'],
  ['cluster', 'slots'],
];

/**
 * The API's start-up check of its Redis user (run-roles.ts): each command on a throwaway key of
 * each pattern it uses (response cache, lock, in-flight marker, rate-limit bucket), the script
 * calls by text and by hash with the KEYS its scripts are given (Redis checks every KEYS entry
 * against the user's patterns, the claim's fingerprint carrier included). A NOPERM names what the
 * user lacks. A Cluster client (`cluster`) also probes the CLUSTER subcommands it sends; a single
 * node would refuse them for want of cluster support, not of permission.
 */
export function apiRedisProbes(prefix: string, cluster = false): RedisProbe[] {
  const response = responseCacheKey(prefix, PROBE, PROBE);
  const lock = keyLockKey(prefix, PROBE, PROBE);
  const inFlight = inFlightMarkerKey(prefix, PROBE, PROBE);
  const bucket = rateBucketKey(prefix, PROBE, PROBE, PROBE);
  const sha = createHash('sha1').update(PROBE_SCRIPT).digest('hex');
  const fingerprint = fingerprintCarrier(prefix, PROBE, PROBE_FINGERPRINT);
  // The claim's KEYS (Redlock's acquire and release), then the rate limit's with its peek.
  const claimKeys = [lock, inFlight, fingerprint, response];
  const rateKeys = [bucket, response];
  return [
    ['ping'],
    ['info', 'server'],
    ['time'],
    ['eval', PROBE_SCRIPT, claimKeys.length, ...claimKeys],
    ['evalsha', sha, claimKeys.length, ...claimKeys],
    ['evalsha', sha, rateKeys.length, ...rateKeys],
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
    ...(cluster ? CLUSTER_PROBES : []),
  ];
}
