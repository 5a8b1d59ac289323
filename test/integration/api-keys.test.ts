import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { runner } from 'node-pg-migrate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/merchants/api-key.js';
import { createApiKey, revokeApiKey } from '../../src/merchants/api-key-repository.js';
import { createAuthenticator } from '../../src/merchants/authenticator.js';
import { MIGRATIONS_DIR } from '../../src/platform/database/migration-runner.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { REPO_ROOT } from '../support/services.js';
import { getJson, startTestApi, type TestApi } from '../support/test-api.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import { capturedLogger } from '../support/captured-logger.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('API keys', () => {
  it('when a key is revoked, then both instances answer 401 within AUTH_CACHE_TTL_MS while a second key of the merchant keeps working', async () => {
    const ttlMs = 1_000;
    const apis = [
      await startTestApi(db, { AUTH_CACHE_TTL_MS: String(ttlMs) }),
      await startTestApi(db, { AUTH_CACHE_TTL_MS: String(ttlMs) }),
    ];
    try {
      const merchant = await (apis[0] as TestApi).merchant('Rotating');
      const second = await createApiKey(db.pool, merchant.id, { label: 'rotation' });
      // Both keys work, and both instances have cached both.
      for (const api of apis) {
        expect((await getJson(api, '/payments', merchant.apiKey)).status).toBe(200);
        expect((await getJson(api, '/payments', second.apiKey)).status).toBe(200);
      }
      expect((await revokeApiKey(db.pool, merchant.apiKeyId))?.revokedAt).toBeInstanceOf(Date);
      const revokedAt = performance.now();
      const refusedAfter: (number | null)[] = [null, null];
      while (refusedAfter.some((ms) => ms === null) && performance.now() - revokedAt < 3 * ttlMs) {
        for (const [i, api] of apis.entries()) {
          expect((await getJson(api, '/payments', second.apiKey)).status).toBe(200);
          if (refusedAfter[i] !== null) continue;
          const status = (await getJson(api, '/payments', merchant.apiKey)).status;
          expect([200, 401]).toContain(status);
          if (status === 401) refusedAfter[i] = performance.now() - revokedAt;
        }
        await sleep(50);
      }
      for (const ms of refusedAfter) {
        expect(ms).not.toBeNull();
        // The TTL, plus one polling round on a busy machine.
        expect(ms ?? Infinity).toBeLessThanOrEqual(ttlMs + 250);
      }
      for (const api of apis) {
        expect((await getJson(api, '/payments', merchant.apiKey)).status).toBe(401);
        expect((await getJson(api, '/payments', second.apiKey)).status).toBe(200);
      }
    } finally {
      await Promise.all(apis.map((api) => api.close()));
    }
  });

  it('when a key has expired, then it is refused and a cached copy does not outlive it', async () => {
    const merchant = await createMerchantRow(db, 'Expiring');
    const key = await createApiKey(db.pool, merchant, { expiresAt: new Date(Date.now() + 300) });
    const authenticator = createAuthenticator(db.login('api'), 60_000, 0);
    expect((await authenticator.authenticate(key.apiKey))?.id).toBe(merchant);
    await sleep(400);
    expect(authenticator.isCached(key.apiKey)).toBe(false);
    expect(await authenticator.authenticate(key.apiKey)).toBeNull();
  });

  it('when an unknown key is tried twice within the negative TTL, then the second answer comes from memory', async () => {
    const authenticator = createAuthenticator(db.login('api'), 60_000, 60_000);
    const unknown = generateApiKey();
    expect(authenticator.isCached(unknown)).toBe(false);
    expect(await authenticator.authenticate(unknown)).toBeNull();
    expect(authenticator.isCached(unknown)).toBe(true);
    expect(await authenticator.authenticate(unknown)).toBeNull();
  });

  it('when the key table migration runs on a database with merchants, then their existing keys keep working', async () => {
    const fresh = await createTestDatabase({ migrated: false });
    try {
      const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
      const before = files.filter((f) => f < '0008').length;
      await migrate(fresh.url, before);
      const apiKey = generateApiKey();
      const id = '0190f5a0-0000-7000-8000-000000000001';
      await fresh.pool.query('INSERT INTO merchants (id, name, api_key_hash) VALUES ($1, $2, $3)', [
        id,
        'Old merchant',
        hashApiKey(apiKey),
      ]);
      // The rest as the service migrates (its runner knows `-- migrate: no-transaction`).
      await migrateUp(fresh.url, capturedLogger().logger);
      const api = await startTestApi(fresh);
      try {
        const res = await getJson(api, '/payments', apiKey);
        expect(res.status).toBe(200);
        const { rows } = await fresh.pool.query<{ prefix: string; last_four: string | null }>(
          'SELECT prefix, last_four FROM api_keys WHERE merchant_id = $1',
          [id],
        );
        expect(rows).toEqual([{ prefix: 'sk_', last_four: null }]);
      } finally {
        await api.close();
      }
    } finally {
      await fresh.drop();
    }
  });
});

describe('merchant:key and merchant:tier commands', () => {
  it('when a key is created, listed and revoked, then create prints the secret once, list never does, and the revoked key is refused', async () => {
    const merchant = await createMerchantRow(db, 'CLI');
    const created = await cli('merchant-key', [
      'create',
      '--merchant',
      merchant,
      '--label',
      'ci',
      '--expires-in-days',
      '30',
    ]);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout) as Record<string, string>;
    expect(key.api_key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(key.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(key.prefix).toBe(key.api_key?.slice(0, 7));
    expect(key.last_four).toBe(key.api_key?.slice(-4));
    expect(key.label).toBe('ci');
    expect(Date.parse(key.expires_at ?? '') - Date.now()).toBeGreaterThan(29 * 86_400_000);

    const listed = await cli('merchant-key', ['list', '--merchant', merchant]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(key.api_key);
    const lines = listed.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.id)).toContain(key.id);
    expect(lines.every((l) => !('api_key' in l) && !('key_hash' in l))).toBe(true);

    const revoked = await cli('merchant-key', ['revoke', '--key', key.id ?? '']);
    expect(revoked.code).toBe(0);
    expect((JSON.parse(revoked.stdout) as { revoked_at: string | null }).revoked_at).not.toBeNull();
    expect(
      await createAuthenticator(db.login('api'), 0, 0).authenticate(key.api_key ?? ''),
    ).toBeNull();
  });

  it('when a read-only key is created, then it is an rk_ key with the read scopes, --scopes adds to them, and an unknown scope is refused naming it', async () => {
    const merchant = await createMerchantRow(db, 'Scoped CLI');
    const created = await cli('merchant-key', ['create', '--merchant', merchant, '--read-only']);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout) as { api_key: string; prefix: string; scopes: unknown };
    expect(key.api_key).toMatch(/^rk_[A-Za-z0-9_-]{43}$/);
    expect(key.prefix).toBe(key.api_key.slice(0, 7));
    expect(key.scopes).toEqual(['payments:read', 'refunds:read', 'webhooks:read', 'events:read']);
    const holder = await createAuthenticator(db.login('api'), 0, 0).authenticate(key.api_key);
    expect(holder?.id).toBe(merchant);

    const support = await cli('merchant-key', [
      'create',
      '--merchant',
      merchant,
      '--read-only',
      '--scopes',
      'refunds:write',
    ]);
    expect((JSON.parse(support.stdout) as { scopes: string[] }).scopes.slice().sort()).toEqual([
      'events:read',
      'payments:read',
      'refunds:read',
      'refunds:write',
      'webhooks:read',
    ]);
    const listed = await cli('merchant-key', ['list', '--merchant', merchant]);
    expect(listed.stdout.trimEnd().split('\n')).toHaveLength(2);

    const bad = await cli('merchant-key', [
      'create',
      '--merchant',
      merchant,
      '--scopes',
      'payments:read,webhooks:manage',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--scopes: unknown scope "webhooks:manage"');
    // Refused before any row: the two keys above are all the merchant has.
    const { rows } = await db.pool.query('SELECT 1 FROM api_keys WHERE merchant_id = $1', [
      merchant,
    ]);
    expect(rows).toHaveLength(2);
  });

  it('when a key row claims sk_ with scopes, or rk_ without, then the table refuses it', async () => {
    const merchant = await createMerchantRow(db, 'Constraint');
    const insert = (prefix: string, scopes: string[] | null) =>
      db.pool.query(
        `INSERT INTO api_keys (id, merchant_id, key_hash, prefix, scopes)
         VALUES (gen_random_uuid(), $1, $2, $3, $4)`,
        [merchant, hashApiKey(generateApiKey()), prefix, scopes],
      );
    await expect(insert('sk_abcd', ['payments:read'])).rejects.toThrow(/api_keys_prefix/);
    await expect(insert('rk_abcd', null)).rejects.toThrow(/api_keys_prefix/);
    await expect(insert('rk_abcd', [])).rejects.toThrow(/api_keys_scopes_known/);
    await expect(insert('rk_abcd', ['payments:admin'])).rejects.toThrow(/api_keys_scopes_known/);
    await insert('rk_abcd', ['payments:read']);
  });

  it('when merchant:key gets an unknown merchant or no command, then it exits 1 with one line', async () => {
    const unknown = await cli('merchant-key', [
      'create',
      '--merchant',
      '0190f5a0-0000-7000-8000-00000000dead',
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('no merchant 0190f5a0-0000-7000-8000-00000000dead');
    const none = await cli('merchant-key', []);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('usage: merchant:key');
  });

  it('when a tier is defined and a merchant created on it, then moved back to default, then the merchant row follows', async () => {
    const defined = await cli('merchant-tier', [
      '--define',
      'gold',
      '--rate',
      '500',
      '--burst',
      '1000',
    ]);
    expect(defined.code).toBe(0);
    expect(JSON.parse(defined.stdout)).toEqual({ name: 'gold', rate_per_second: 500, burst: 1000 });
    const created = await cli('merchant-create', ['--name', 'Gold Ltd', '--tier', 'gold']);
    expect(created.code).toBe(0);
    const merchant = JSON.parse(created.stdout) as { id: string; tier: string; api_key: string };
    expect(merchant.tier).toBe('gold');
    expect(await tierOf(merchant.id)).toBe('gold');
    const moved = await cli('merchant-tier', ['--merchant', merchant.id, '--tier', 'default']);
    expect(moved.code).toBe(0);
    expect(await tierOf(merchant.id)).toBe('default');
    const missing = await cli('merchant-tier', ['--merchant', merchant.id, '--tier', 'platinum']);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('no tier named "platinum"');
  });
});

async function tierOf(merchantId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ tier: string }>(
    'SELECT tier FROM merchants WHERE id = $1',
    [merchantId],
  );
  return rows[0]?.tier;
}

async function createMerchantRow(target: TestDatabase, name: string): Promise<string> {
  const id = crypto.randomUUID();
  await target.pool.query('INSERT INTO merchants (id, name) VALUES ($1, $2)', [id, name]);
  return id;
}

async function migrate(databaseUrl: string, count: number): Promise<void> {
  await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count,
    log: () => undefined,
  });
}

/** Runs a compiled command against this file's database. */
async function cli(
  script: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // An owner-only command (npm run merchant:key): the owner's login, as an operator runs it.
  const child = spawn(
    process.execPath,
    [path.join(REPO_ROOT, 'dist/cli', `${script}.js`), ...args],
    {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, stdout, stderr };
}
