import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { responseCacheKey } from '../../src/idempotency/response-cache.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../tools/support/scratch-database.js';
import { roleDatabaseUrl } from '../support/role-login.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { REPO_ROOT } from '../support/services.js';

/*
 * Redis fails over under load (issue 39, DESIGN 123): the API, deployed as its own process on
 * its own Redis user, reaches the primary through the Sentinels over TLS. The primary is killed
 * (SIGKILL) while keyed POSTs flow; Sentinel promotes the replica and the API follows it. Every
 * endpoint comes from the environment (`STACK_TOPOLOGY=ha scripts/stack.sh env`; DATABASE_URL
 * is the owner's login of whichever Postgres the run uses).
 */

const run = promisify(execFile);
const env = (name: string): string => {
  const value = process.env[name];
  if (!value)
    throw new Error(`${name} is not set: run under STACK_TOPOLOGY=ha scripts/stack.sh env`);
  return value;
};
const stack = async (...args: string[]) =>
  (
    await run('bash', [`${REPO_ROOT}/scripts/stack.sh`, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, STACK_TOPOLOGY: 'ha' },
      timeout: 180_000,
    })
  ).stdout.trim();

const MASTER = process.env.REDIS_SENTINEL_MASTER ?? 'payments';
/** Sentinel notices in 2 s (down-after) and promotes within a few: the API must follow by then. */
const RECOVERY_BOUND_MS = 30_000;
/** The deployed prefix: payments_api may touch only its patterns (a new merchant: no collisions). */
const prefix = 'payments:';

const tls = () => ({ ca: readFileSync(env('REDIS_TLS_CA_FILE'), 'utf8') });
const sentinels = () =>
  env('REDIS_SENTINELS')
    .split(',')
    .map((seed) => ({
      host: seed.slice(0, seed.lastIndexOf(':')),
      port: Number(seed.split(':').pop()),
    }));

/** The primary Sentinel names now, as "host:port". */
async function sentinelPrimary(): Promise<string> {
  for (const { host, port } of sentinels()) {
    const sentinel = new Redis({
      host,
      port,
      tls: tls(),
      password: process.env.REDIS_SENTINEL_PASSWORD,
      lazyConnect: true,
      connectTimeout: 2_000,
      commandTimeout: 2_000,
      retryStrategy: () => null,
    });
    try {
      await sentinel.connect();
      const reply = (await sentinel.call(
        'SENTINEL',
        'get-master-addr-by-name',
        MASTER,
      )) as string[];
      return `${reply[0] ?? ''}:${reply[1] ?? ''}`;
    } catch {
      // the next Sentinel
    } finally {
      sentinel.disconnect();
    }
  }
  throw new Error('no Sentinel answered');
}

/** The operators' login (REDIS_URL's user) on one node, over TLS. */
function nodeClient(address: string): Redis {
  const url = new URL(env('REDIS_URL'));
  const [host = '', port = ''] = address.split(':');
  return new Redis({
    host,
    port: Number(port),
    tls: tls(),
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
}

async function onNode<T>(address: string, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = nodeClient(address);
  try {
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

interface Answer {
  status: number;
  body: string;
}

let db: ScratchDatabase | undefined;
let owner: pg.Pool | undefined;
let api: RoleProcess | undefined;
let apiUrl: string;
let merchant: { id: string; apiKey: string };

async function post(key: string): Promise<Answer> {
  const res = await fetch(`${apiUrl}/payments`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${merchant.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify({ amount: 1234, currency: 'EUR', description: key }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.text() };
}

const succeeded = (answer: Answer) => answer.status === 201 || answer.status === 202;

beforeAll(async () => {
  const logger = createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' });
  db = await createScratchDatabase(env('DATABASE_URL'), `ha_redis_${randomUUID().slice(0, 8)}`);
  await migrateUp(db.url, logger);
  owner = new pg.Pool({ connectionString: db.url, max: 2 });
  const url = db.url;
  const created = await createMerchant(owner, 'Failover merchant');
  merchant = { id: created.id, apiKey: created.apiKey };
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  api = startRoleProcess('apps/api/main.js', {
    ...inherited,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    PORT: '0',
    METRICS_PORT: '0',
    DATABASE_URL: roleDatabaseUrl(url, 'api'),
    REDIS_URL: env('API_REDIS_URL'),
    REDIS_KEY_PREFIX: prefix,
    // Closed: a request without Redis is a 503, so a success after the kill proves the API
    // reached the new primary (open would serve from the database and prove nothing).
    REDIS_FAILURE_MODE: 'closed',
  });
  const ready = await api.logLine('api listening');
  apiUrl = `http://127.0.0.1:${String(ready.port)}`;
}, 180_000);

afterAll(async () => {
  await api?.stop();
  await owner?.end();
  await db?.drop();
  // The killed node back, whatever the test reached (idempotent).
  await stack('start', 'redis');
}, 300_000);

describe('Redis failover through Sentinel (TLS, ACL users)', () => {
  it('when the primary is killed under load, then the replica is promoted, the API follows, replays are identical and each key has one payment; the old primary rejoins as a replica', async () => {
    const oldPrimary = await sentinelPrimary();
    const first = new Map<string, Answer>();
    const attempt = async (key: string) => {
      const answer = await post(key);
      if (succeeded(answer) && !first.has(key)) first.set(key, answer);
      return answer;
    };

    // Before: the API answers through Redis (its answer is cached on the primary).
    expect(succeeded(await attempt('before-1'))).toBe(true);
    const cachedBefore = await onNode(oldPrimary, (redis) =>
      redis.exists(responseCacheKey(prefix, merchant.id, 'before-1')),
    );
    expect(cachedBefore).toBe(1);

    // Load: four clients, each a new key until it succeeds, then its replay.
    const load = { flowing: true };
    const running = () => load.flowing;
    let keys = 0;
    const statuses = new Map<number, number>();
    const client = async (id: number) => {
      while (running()) {
        const key = `load-${String(id)}-${String(keys++)}`;
        for (;;) {
          const answer = await attempt(key).catch(() => ({ status: 0, body: '' }));
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (succeeded(answer) || !running()) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        if (first.has(key)) await attempt(key);
      }
    };
    const clients = Promise.all([1, 2, 3, 4].map(client));
    await expect.poll(() => first.size, { timeout: 10_000 }).toBeGreaterThan(10);

    const pid = await stack('pid', 'redis-primary');
    const killedAt = Date.now();
    process.kill(Number(pid), 'SIGKILL');

    // Sentinel promotes the replica.
    await expect
      .poll(() => sentinelPrimary().catch(() => oldPrimary), {
        timeout: RECOVERY_BOUND_MS,
        interval: 250,
      })
      .not.toBe(oldPrimary);
    const newPrimary = await sentinelPrimary();

    // The API follows: a new key succeeds and its answer is cached on the new primary.
    let recoveredKey = '';
    await expect
      .poll(
        async () => {
          const key = `after-${randomUUID()}`;
          if (!succeeded(await attempt(key))) return false;
          recoveredKey = key;
          return true;
        },
        { timeout: RECOVERY_BOUND_MS - (Date.now() - killedAt), interval: 250 },
      )
      .toBe(true);
    const recoveredMs = Date.now() - killedAt;
    expect(
      await onNode(newPrimary, (redis) =>
        redis.exists(responseCacheKey(prefix, merchant.id, recoveredKey)),
      ),
    ).toBe(1);
    load.flowing = false;
    await clients;
    process.stdout.write(
      `redis failover: primary ${oldPrimary} -> ${newPrimary}, API answering through it ${String(recoveredMs)} ms after the kill; statuses ${JSON.stringify([...statuses])}\n`,
    );
    // During the failover: successes, or 503s while Redis was away (closed mode); nothing else.
    expect([...statuses.keys()].every((status) => [201, 202, 409, 503].includes(status))).toBe(
      true,
    );

    // Every key replays its first answer byte for byte.
    for (const [key, answer] of first) {
      expect(await post(key), key).toEqual(answer);
    }
    // One payment per key, and the key's record names the payment its answer did.
    if (!owner) throw new Error('no database');
    const { rows } = await owner.query<{ key: string; payment_id: string }>(
      'SELECT idempotency_key AS key, payment_id FROM idempotency_keys WHERE merchant_id = $1',
      [merchant.id],
    );
    const payments = await owner.query('SELECT 1 FROM payments WHERE merchant_id = $1', [
      merchant.id,
    ]);
    expect(payments.rowCount).toBe(first.size);
    expect(new Set(rows.map((row) => row.key))).toEqual(new Set(first.keys()));
    for (const row of rows) {
      const answered = JSON.parse(first.get(row.key)?.body ?? '{}') as { id?: string };
      expect(answered.id).toBe(row.payment_id);
    }

    // The old node restarted comes back as a replica of the new primary.
    await stack('start', 'redis');
    await expect
      .poll(
        () =>
          onNode(oldPrimary, (redis) => redis.info('replication')).catch((error: unknown) =>
            String(error),
          ),
        { timeout: 60_000, interval: 500 },
      )
      .toMatch(
        new RegExp(
          `role:slave[\\s\\S]*master_port:${newPrimary.split(':')[1] ?? ''}[\\s\\S]*master_link_status:up`,
        ),
      );
    expect(await sentinelPrimary()).toBe(newPrimary);
  });
});
