import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { apiRedisProbes } from '../../src/apps/api/redis-needs.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { checkRedisPermissions } from '../../src/platform/redis/redis-permissions.js';
import { startDeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { createApiRedisUser, type RedisRoleUser } from '../support/redis-user.js';
import { startRoleProcess } from '../support/role-process.js';

/**
 * Issue 38 item 5 (DESIGN 117): the API reaches Redis as its own user, whose ACL is
 * scripts/redis/acl-users.sh's payments_api line (here for this file's prefix): its two key
 * patterns, the commands it sends and nothing else. A user that lacks one stops the API at boot.
 */

let db: TestDatabase;
let prefix: string;
let user: RedisRoleUser;
let client: Redis;

beforeAll(async () => {
  db = await createTestDatabase();
  prefix = testConfig().REDIS_KEY_PREFIX;
  user = await createApiRedisUser(prefix);
  client = new Redis(user.url(), { maxRetriesPerRequest: 1 });
}, 60_000);

afterAll(async () => {
  client.disconnect();
  await user.drop();
  await db.drop();
});

/** The reply of a command the user sends: 'ok' or Redis' error text. */
async function reply(command: string, ...args: (string | number)[]): Promise<string> {
  try {
    await client.call(command, ...args);
    return 'ok';
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The keys matching `pattern`, read as the suite's admin (the default user). */
async function keysMatching(pattern: string): Promise<string[]> {
  const admin = new Redis(testConfig().REDIS_URL);
  try {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
    return found;
  } finally {
    admin.disconnect();
  }
}

/** The API process on `redisUrl`, until it exits: its exit code and its fatal lines. */
async function apiExit(redisUrl: string): Promise<{ code: number | null; fatal: string[] }> {
  const proc = startRoleProcess('apps/api/main.js', {
    DATABASE_URL: db.roleUrl('api'),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: prefix,
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
  });
  onTestFinished(() => proc.stop('SIGKILL').then(() => undefined));
  const deadline = Date.now() + 30_000;
  while (!proc.output().includes('"level":60') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Exited on its own (stop only signals a process still running: then the code is null).
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const code = await proc.stop('SIGKILL');
  const fatal = proc
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"level":60'))
    .map((line) => String((JSON.parse(line) as { msg: unknown }).msg));
  return { code, fatal };
}

describe('the API Redis user', () => {
  it('when it runs what the API sends on its own keys, then Redis allows every command', async () => {
    await expect(checkRedisPermissions(client, user.name, apiRedisProbes(prefix))).resolves.toBe(
      undefined,
    );
  });

  it('when it tries FLUSHALL, KEYS, CONFIG, ACL, SCRIPT LOAD, CLIENT or PUBLISH, then Redis refuses (NOPERM)', async () => {
    for (const [command, ...args] of [
      ['flushall'],
      ['flushdb'],
      ['keys', '*'],
      ['config', 'get', 'maxmemory'],
      ['acl', 'whoami'],
      ['script', 'load', 'return 1'],
      ['publish', 'channel', 'x'],
      ['client', 'list'],
    ] as const) {
      expect(await reply(command, ...args), command).toMatch(/^NOPERM/);
    }
  });

  it('when it touches a key outside its patterns, directly or from a script, then Redis refuses', async () => {
    const admin = new Redis(testConfig().REDIS_URL);
    onTestFinished(() => {
      admin.disconnect();
    });
    const other = `${prefix}other:secret`;
    await admin.set(other, 'x', 'PX', 60_000);
    onTestFinished(() => admin.del(other).then(() => undefined));
    expect(await reply('get', other)).toMatch(/^NOPERM/);
    expect(await reply('get', 'payments:idem:resp:v3:m:k')).toMatch(/^NOPERM/);
    expect(await reply('del', other)).toMatch(/^NOPERM/);
    expect(await reply('eval', "return redis.call('GET', KEYS[1])", 1, other)).toMatch(/NOPERM/);
    expect(await reply('eval', "return redis.call('FLUSHALL')", 0)).toMatch(
      /can't run this command/,
    );
    expect(await admin.get(other)).toBe('x');
    expect(await reply('get', `${prefix}idem:resp:v3:m:k`)).toBe('ok');
  });
});

describe('an API process and its Redis user', () => {
  it('when its user lacks HSET (the rate limit script), then it exits 1 with one line naming HSET', async () => {
    const lacking = await createApiRedisUser(prefix, ['hset']);
    onTestFinished(() => lacking.drop());
    const { code, fatal } = await apiExit(lacking.url());
    expect(code).toBe(1);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toContain(
      `Redis user ${lacking.name}, which may not run HSET on ${prefix}rl:`,
    );
    expect(fatal[0]).toContain('NOPERM');
  }, 60_000);

  it('when its password is wrong, then it exits 1 with one line saying it cannot log in', async () => {
    const wrong = new URL(user.url());
    wrong.password = 'not-the-password';
    const { code, fatal } = await apiExit(wrong.toString());
    expect(code).toBe(1);
    expect(fatal).toEqual([
      `REDIS_URL cannot log in as Redis user ${user.name} (WRONGPASS invalid username-password pair or user is disabled.)`,
    ]);
  }, 60_000);

  it('when it runs on its own user, then it takes a payment, replays it from Redis and rate limits', async () => {
    const fleet = await startDeployedFleet(db, ['api']);
    onTestFinished(() => fleet.stop().then(() => undefined));
    const { apiKey } = await createMerchant(db.pool, 'ACL merchant');
    const key = crypto.randomUUID();
    const post = () =>
      fetch(`${fleet.apiUrl}/payments`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ amount: 1000, currency: 'EUR' }),
      });
    const first = await post();
    expect(first.status).toBe(202);
    expect(first.headers.get('ratelimit')).not.toBeNull();
    const replay = await post();
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    // Written in Redis by the API's user (a refused script would have fallen back to memory).
    const fleetPrefix = fleet.env.REDIS_KEY_PREFIX ?? '';
    expect(await keysMatching(`${fleetPrefix}idem:resp:*`)).toHaveLength(1);
    // The buckets expire within milliseconds of refilling: the decisions' store tells instead.
    const internal = await fleet.processes.get('api')?.logLine('internal listener ready');
    const metrics = await (
      await fetch(`http://127.0.0.1:${String(internal?.port)}/metrics`)
    ).text();
    expect(metrics).toMatch(/^rate_limit_decisions_total\{[^}]*store="redis"\} [1-9]/m);
    expect(metrics).not.toMatch(/store="memory"/);
    expect(fleet.processes.get('api')?.output()).not.toMatch(/"level":(40|50)[^\n]*redis/i);
  }, 90_000);
});
