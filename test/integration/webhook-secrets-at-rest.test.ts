import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { encodeCachedResponse, responseCacheKey } from '../../src/idempotency/response-cache.js';
import { createKeyRing } from '../../src/platform/secrets/key-ring.js';
import { loadConfig } from '../../src/platform/config/config.js';
import {
  newWebhookSecret,
  openWebhookSecret,
  storedSecretOf,
} from '../../src/webhooks/webhook-secret.js';
import { createTestDatabase, TEST_SECRETS_KEYS, type TestDatabase } from '../support/isolation.js';
import { REPO_ROOT } from '../support/services.js';
import { storedWebhookSecrets } from '../support/stored-webhook-secrets.js';
import { send, startTestApi, type Answer, type TestApi } from '../support/test-api.js';
import { scanKeys } from '../../tools/support/scan-keys.js';

// Issue 38 items 1-2 (DESIGN 113, 114): no webhook signing secret in clear in Postgres (any
// table, any text, json or bytea column) or in Redis (any key of the API's prefix), after
// endpoints are created with and without an Idempotency-Key, rotated and deleted; replays after
// a rotation or a deletion do not show the old secret; `npm run secrets:reencrypt` seals the
// rows a previous release left in clear and redacts its stored answers and their Redis copies.

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let merchantId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' });
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey, id: merchantId } = await api.merchant('Secrets merchant', BENCH_TIER.name));
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

async function post(route: string, body: unknown, key?: string): Promise<Answer> {
  const res = await fetch(api.url(route), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: JSON.parse(text) as Record<string, unknown>,
  };
}

const endpointBody = (name: string) => ({
  url: `http://127.0.0.1:9/${name}`,
  enabled_events: ['*'],
});

/** Every place in Postgres that holds `needle`: "table.column" of every text-like column. */
async function postgresHolding(needle: string): Promise<string[]> {
  const { rows: columns } = await db.pool.query<{
    table_name: string;
    column_name: string;
    data_type: string;
  }>(
    `SELECT c.table_name, c.column_name, c.data_type
       FROM information_schema.columns c
       JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
        AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'ARRAY', 'USER-DEFINED')`,
  );
  const found: string[] = [];
  for (const { table_name: table, column_name: column, data_type: type } of columns) {
    const test =
      type === 'bytea'
        ? `position(convert_to($1, 'UTF8') IN "${column}") > 0`
        : `"${column}"::text LIKE '%' || $1 || '%'`;
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table}" WHERE ${test}`,
      [needle],
    );
    if ((rows[0]?.n ?? 0) > 0) found.push(`${table}.${column}`);
  }
  expect(columns.length).toBeGreaterThan(20);
  return found;
}

/** Every Redis key under the API's prefix whose value (of whatever type) holds `needle`. */
async function redisHolding(needle: string): Promise<string[]> {
  const redis = api.platform.redis;
  const found: string[] = [];
  let seen = 0;
  await scanKeys(redis, api.platform.config.REDIS_KEY_PREFIX, async (keys) => {
    for (const key of keys) {
      seen++;
      const type = await redis.type(key);
      const value =
        type === 'string'
          ? await redis.get(key)
          : type === 'hash'
            ? JSON.stringify(await redis.hgetall(key))
            : type === 'list'
              ? JSON.stringify(await redis.lrange(key, 0, -1))
              : type === 'set'
                ? JSON.stringify(await redis.smembers(key))
                : type === 'zset'
                  ? JSON.stringify(await redis.zrange(key, 0, -1))
                  : `unknown type ${type}`;
      if (value === null || value.includes(needle) || value.startsWith('unknown type'))
        found.push(`${key} (${type})`);
    }
  });
  expect(seen).toBeGreaterThan(0);
  return found;
}

describe('webhook secrets at rest', () => {
  it('when endpoints are created (keyed and not), replayed, rotated and deleted, then no whsec_ is in clear in any table or Redis key, and replays show a secret only while it is current', async () => {
    const plain = await post('/webhook_endpoints', endpointBody('plain'));
    const keyed = await post('/webhook_endpoints', endpointBody('keyed'), 'create-keyed');
    const doomed = await post('/webhook_endpoints', endpointBody('doomed'), 'create-doomed');
    for (const answer of [plain, keyed, doomed]) {
      expect(answer.status, answer.text).toBe(201);
      expect(answer.json.secret).toMatch(/^whsec_/);
    }
    // A replay while the secret is current: the same bytes, secret included.
    const replayed = await post('/webhook_endpoints', endpointBody('keyed'), 'create-keyed');
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.text).toBe(keyed.text);
    // The stored answer and its Redis copy hold `secret: null`.
    const stored = await db.pool.query<{ response_body: string }>(
      'SELECT response_body FROM idempotency_keys WHERE idempotency_key = $1',
      ['create-keyed'],
    );
    expect(JSON.parse(stored.rows[0]?.response_body ?? '{}')).toEqual({
      ...keyed.json,
      secret: null,
    });

    const plainId = plain.json.id as string;
    const keyedId = keyed.json.id as string;
    const doomedId = doomed.json.id as string;
    const graceful = await post(`/webhook_endpoints/${plainId}/rotate_secret`, {
      expires_in_seconds: 3600,
    });
    const immediate = await post(`/webhook_endpoints/${keyedId}/rotate_secret`, {
      expires_in_seconds: 0,
    });
    expect([graceful.status, immediate.status]).toEqual([200, 200]);
    expect((await send(api, 'DELETE', `/webhook_endpoints/${doomedId}`, apiKey)).status).toBe(200);

    // Sealed, never in clear, and each opens to what the API showed.
    expect(await storedWebhookSecrets(db.pool, plainId)).toEqual([
      { secret: plain.json.secret, clear: false, expired: false },
      { secret: graceful.json.secret, clear: false, expired: null },
    ]);
    expect((await storedWebhookSecrets(db.pool, keyedId)).map((s) => s.secret)).toEqual([
      keyed.json.secret,
      immediate.json.secret,
    ]);

    // Replays after the rotation and after the deletion: the stored 201, the secret null.
    for (const [name, key, first] of [
      ['keyed', 'create-keyed', keyed],
      ['doomed', 'create-doomed', doomed],
    ] as const) {
      const again = await post('/webhook_endpoints', endpointBody(name), key);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.json).toEqual({ ...first.json, secret: null });
      expect(again.text).not.toContain('whsec_');
    }
    // The same from Postgres when the Redis copy is gone.
    await api.platform.redis.del(
      responseCacheKey(api.platform.config.REDIS_KEY_PREFIX, merchantId, 'create-keyed'),
    );
    const fromDatabase = await post('/webhook_endpoints', endpointBody('keyed'), 'create-keyed');
    expect(fromDatabase.json).toEqual({ ...keyed.json, secret: null });

    expect(await postgresHolding('whsec_')).toEqual([]);
    expect(await redisHolding('whsec_')).toEqual([]);
  });

  it('when a previous release left secrets and stored answers in clear, then `npm run secrets:reencrypt` seals them under the newest key, redacts the answers and their Redis copies, and a second run changes nothing', async () => {
    const created = await post('/webhook_endpoints', endpointBody('legacy'));
    const id = created.json.id as string;
    // As the previous release wrote them: a clear secret, an answer with it, its Redis copy.
    const legacySecret = newWebhookSecret();
    await db.pool.query(
      `INSERT INTO webhook_endpoint_secrets (endpoint_id, secret, created_at) VALUES ($1, $2, clock_timestamp())`,
      [id, legacySecret],
    );
    const legacyBody = JSON.stringify({ ...created.json, secret: legacySecret });
    await db.pool.query(
      `INSERT INTO idempotency_keys (merchant_id, idempotency_key, fingerprint, response_status, response_body, created_at, expires_at)
       VALUES ($1, 'legacy-key', $2, 201, $3, now(), now() + interval '1 day')`,
      [merchantId, Buffer.alloc(32, 1), legacyBody],
    );
    const cacheKey = responseCacheKey(
      api.platform.config.REDIS_KEY_PREFIX,
      merchantId,
      'legacy-key',
    );
    await api.platform.redis.set(
      cacheKey,
      encodeCachedResponse({
        fingerprint: '01'.repeat(32),
        status: 201,
        body: legacyBody,
        expiresAt: new Date(Date.now() + 86_400_000),
      }),
    );
    expect(await postgresHolding(legacySecret)).toEqual([
      'idempotency_keys.response_body',
      'webhook_endpoint_secrets.secret',
    ]);

    const newest = `k2:${Buffer.alloc(32, 9).toString('base64')}`;
    const ring = `${newest},${TEST_SECRETS_KEYS}`;
    const first = await runReencrypt(ring);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      key_id: 'k2',
      stored_answers_redacted: 1,
      cached_answers_deleted: 1,
    });
    expect(
      (JSON.parse(first.stdout) as { secrets_reencrypted: number }).secrets_reencrypted,
    ).toBeGreaterThanOrEqual(2);
    const again = await runReencrypt(ring);
    expect(JSON.parse(again.stdout)).toMatchObject({
      secrets_reencrypted: 0,
      stored_answers_redacted: 0,
    });

    expect(await postgresHolding('whsec_')).toEqual([]);
    expect(await redisHolding('whsec_')).toEqual([]);
    const { rows } = await db.pool.query<{
      secret: string | null;
      secret_ciphertext: Buffer;
      secret_key_id: string;
    }>(
      'SELECT secret, secret_ciphertext, secret_key_id FROM webhook_endpoint_secrets WHERE endpoint_id = $1 ORDER BY created_at',
      [id],
    );
    const newRing = createKeyRing(loadConfig({ SECRETS_KEYS: ring }).SECRETS_KEYS ?? []);
    expect(
      rows.map((row) => [row.secret_key_id, openWebhookSecret(newRing, id, storedSecretOf(row))]),
    ).toEqual([
      ['k2', created.json.secret],
      ['k2', legacySecret],
    ]);
  });
});

/** `node dist/cli/secrets-reencrypt.js` as the owner, with `ring` as SECRETS_KEYS. */
function runReencrypt(
  ring: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { REDIS_CLUSTER_NODES: cluster, REDIS_TLS_CA_FILE: caFile } = api.platform.config;
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist/cli/secrets-reencrypt.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: db.url,
      REDIS_URL: api.platform.config.REDIS_URL,
      REDIS_KEY_PREFIX: api.platform.config.REDIS_KEY_PREFIX,
      // The run's Redis topology (a Cluster under test:redis-cluster), as the API has it.
      ...(cluster ? { REDIS_CLUSTER_NODES: cluster.join(',') } : {}),
      ...(caFile ? { REDIS_TLS_CA_FILE: caFile } : {}),
      SECRETS_KEYS: ring,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
