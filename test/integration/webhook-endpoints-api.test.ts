import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { storedWebhookSecrets } from '../support/stored-webhook-secrets.js';
import { getJson, send, startTestApi, type Answer, type TestApi } from '../support/test-api.js';

// POST/GET/PATCH/DELETE /webhook_endpoints and rotate_secret against the API logged in as
// payments_api. `api` allows loopback (WEBHOOK_ALLOWED_NETWORKS, as tests and local use do);
// `strict` is the same database with no allowlist.

let db: TestDatabase;
let api: TestApi;
let strict: TestApi;
let apiKey: string;
let merchantId: string;
let otherKey: string;

const MAX = 5;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

beforeAll(async () => {
  db = await createTestDatabase();
  const limits = { WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT: String(MAX) };
  api = await startTestApi(db, { ...limits, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' });
  strict = await startTestApi(db, limits);
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey, id: merchantId } = await api.merchant('Webhook merchant', BENCH_TIER.name));
  ({ apiKey: otherKey } = await api.merchant('Other merchant', BENCH_TIER.name));
});

afterAll(async () => {
  await api.close();
  await strict.close();
  await db.drop();
});

async function post(
  target: TestApi,
  path: string,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(target.url(path), {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
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

async function counts(): Promise<{ endpoints: number; secrets: number; keys: number }> {
  const { rows } = await db.pool.query<{ endpoints: number; secrets: number; keys: number }>(
    `SELECT (SELECT count(*) FROM webhook_endpoints)::int AS endpoints,
            (SELECT count(*) FROM webhook_endpoint_secrets)::int AS secrets,
            (SELECT count(*) FROM idempotency_keys)::int AS keys`,
  );
  return rows[0] ?? { endpoints: -1, secrets: -1, keys: -1 };
}

async function deleteAll(): Promise<void> {
  await db.pool.query('DELETE FROM webhook_endpoints');
}

describe('POST /webhook_endpoints', () => {
  it('when valid, then 201 with the endpoint and its secret, stored once; GET never shows the secret', async () => {
    const res = await post(api, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:9/hooks',
      enabled_events: ['payment.settled', 'refund.failed'],
      description: 'orders',
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const id = res.json.id as string;
    expect(res.headers.get('location')).toBe(`/webhook_endpoints/${id}`);
    expect(res.json).toEqual({
      id,
      object: 'webhook_endpoint',
      url: 'http://127.0.0.1:9/hooks',
      enabled_events: ['payment.settled', 'refund.failed'],
      description: 'orders',
      disabled: false,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
      created_at: expect.stringMatching(/Z$/) as unknown,
      updated_at: res.json.created_at,
      secret: expect.stringMatching(SECRET) as unknown,
    });
    const owner = await db.pool.query('SELECT merchant_id FROM webhook_endpoints WHERE id = $1', [
      id,
    ]);
    expect(owner.rows).toEqual([{ merchant_id: merchantId }]);
    // Sealed under the key ring (DESIGN 113), never in clear.
    expect(await storedWebhookSecrets(db.pool, id)).toEqual([
      { secret: res.json.secret, clear: false, expired: null },
    ]);
    const got = await getJson(api, `/webhook_endpoints/${id}`, apiKey);
    expect(got.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = res.json;
    expect(got.json).toEqual(withoutSecret);
    const list = await getJson(api, '/webhook_endpoints', apiKey);
    expect(list.json).toEqual({ object: 'list', data: [withoutSecret], has_more: false });
    expect(list.text).not.toContain('whsec_');
    await deleteAll();
  });

  it('when retried with the same Idempotency-Key, then the same answer (Idempotent-Replayed) and one endpoint', async () => {
    const body = { url: 'http://127.0.0.1:9/a', enabled_events: ['*'] };
    const first = await post(api, '/webhook_endpoints', apiKey, body, {
      'idempotency-key': 'ep-1',
    });
    const again = await post(api, '/webhook_endpoints', apiKey, body, {
      'idempotency-key': 'ep-1',
    });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await post(
      api,
      '/webhook_endpoints',
      apiKey,
      { ...body, url: 'http://127.0.0.1:9/b' },
      {
        'idempotency-key': 'ep-1',
      },
    );
    expect(other.status).toBe(422);
    expect(other.json.code).toBe('idempotency_key_reused');
    expect((await counts()).endpoints).toBe(1);
    await deleteAll();
  });

  it('when a field is invalid, then 400 problem+json naming it, and nothing is written', async () => {
    const before = await counts();
    const cases: [unknown, string][] = [
      [{ url: 'http://127.0.0.1:9/', enabled_events: [] }, 'enabled_events'],
      [{ url: 'http://127.0.0.1:9/', enabled_events: ['payment.created'] }, 'enabled_events.0'],
      [{ url: 'http://127.0.0.1:9/', enabled_events: ['*', 'payment.failed'] }, 'enabled_events'],
      [{ url: 42, enabled_events: ['*'] }, 'url'],
      [{ enabled_events: ['*'] }, 'url'],
      [{ url: 'http://127.0.0.1:9/', enabled_events: ['*'], secret: 'x' }, 'secret'],
      [
        { url: 'http://127.0.0.1:9/', enabled_events: ['*'], description: 'x'.repeat(501) },
        'description',
      ],
      [
        { url: 'http://127.0.0.1:9/', enabled_events: ['*'], description: 'a\ud800' },
        'description',
      ],
      [{ url: 'http://127.0.0.1:9/', enabled_events: ['*'], disabled: 'yes' }, 'disabled'],
    ];
    for (const [body, path] of cases) {
      const res = await post(api, '/webhook_endpoints', apiKey, body, {
        'idempotency-key': `bad-${path}`,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.json.code).toBe('validation_failed');
      expect((res.json.errors as { path: string }[]).map((e) => e.path)).toContain(path);
    }
    expect(await counts()).toEqual(before);
  });

  it('when the URL is not http(s), has userinfo or is too long, then 422 and nothing is written', async () => {
    const before = await counts();
    for (const url of [
      'ftp://127.0.0.1/x',
      'http://user:pw@127.0.0.1/x',
      `http://127.0.0.1/${'a'.repeat(2100)}`,
      'not a url',
    ]) {
      const res = await post(api, '/webhook_endpoints', apiKey, { url, enabled_events: ['*'] });
      expect(res.status, url.slice(0, 40)).toBe(422);
      expect(res.json.code).toBe('webhook_url_not_allowed');
    }
    expect(await counts()).toEqual(before);
  });

  it('when the URL is on a loopback or private address without an allowlist, then a clear 422; allowlisted, 201', async () => {
    const before = await counts();
    const loopback = await post(strict, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:8080/hooks',
      enabled_events: ['*'],
    });
    expect(loopback.status).toBe(422);
    expect(loopback.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(loopback.json.code).toBe('webhook_url_not_allowed');
    expect(loopback.json.detail).toContain('resolves to 127.0.0.1, a loopback address');
    expect(loopback.json.detail).toContain('public addresses only');
    const named = await post(strict, '/webhook_endpoints', apiKey, {
      url: 'http://localhost:8080/',
      enabled_events: ['*'],
    });
    expect(named.status).toBe(422);
    expect(named.json.detail).toMatch(/loopback address/);
    const lan = await post(strict, '/webhook_endpoints', apiKey, {
      url: 'https://10.1.2.3/',
      enabled_events: ['*'],
    });
    expect(lan.status).toBe(422);
    expect(lan.json.detail).toContain('10.1.2.3, a private address');
    const v6 = await post(strict, '/webhook_endpoints', apiKey, {
      url: 'http://[::1]:80/',
      enabled_events: ['*'],
    });
    expect(v6.status).toBe(422);
    expect(await counts()).toEqual(before);
    const allowed = await post(api, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:8080/hooks',
      enabled_events: ['*'],
    });
    expect(allowed.status).toBe(201);
    // PATCH of the url is checked the same way.
    const patched = await send(
      strict,
      'PATCH',
      `/webhook_endpoints/${allowed.json.id as string}`,
      apiKey,
      {
        url: 'http://192.168.1.1/',
      },
    );
    expect(patched.status).toBe(422);
    expect(patched.json.detail).toContain('private address');
    const unchanged = await getJson(api, `/webhook_endpoints/${allowed.json.id as string}`, apiKey);
    expect(unchanged.json.url).toBe('http://127.0.0.1:8080/hooks');
    await deleteAll();
  });

  it('when many creates race past the limit, then exactly the limit is created and the rest are 409', async () => {
    const answers = await Promise.all(
      Array.from({ length: MAX + 7 }, (_, i) =>
        post(api, '/webhook_endpoints', apiKey, {
          url: `http://127.0.0.1:9/${i}`,
          enabled_events: ['*'],
        }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    expect(answers.find((a) => a.status === 409)?.json.code).toBe('webhook_endpoint_limit');
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_endpoints WHERE merchant_id = $1',
      [merchantId],
    );
    expect(rows[0]?.n).toBe(MAX);
    // At the limit, the URL is not looked at (its host is not resolved): the limit answers.
    const unresolved = await post(strict, '/webhook_endpoints', apiKey, {
      url: 'https://no-such-host.invalid/hooks',
      enabled_events: ['*'],
    });
    expect(unresolved.status, unresolved.text).toBe(409);
    expect(unresolved.json.code).toBe('webhook_endpoint_limit');
    // Paginated like GET /payments.
    const page = await getJson(api, '/webhook_endpoints?limit=3', apiKey);
    expect(page.json.has_more).toBe(true);
    const data = page.json.data as { id: string }[];
    const next = await getJson(
      api,
      `/webhook_endpoints?limit=3&starting_after=${data[2]?.id ?? ''}`,
      apiKey,
    );
    expect(next.json.has_more).toBe(false);
    expect((next.json.data as unknown[]).length).toBe(MAX - 3);
    await deleteAll();
  });
});

describe('/webhook_endpoints/{id}', () => {
  it('when another merchant asks for, changes, deletes or rotates an endpoint, then 404 and it is untouched', async () => {
    const created = await post(api, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:9/',
      enabled_events: ['*'],
    });
    const id = created.json.id as string;
    expect((await getJson(api, `/webhook_endpoints/${id}`, otherKey)).status).toBe(404);
    expect(
      (await send(api, 'PATCH', `/webhook_endpoints/${id}`, otherKey, { disabled: true })).status,
    ).toBe(404);
    expect((await send(api, 'DELETE', `/webhook_endpoints/${id}`, otherKey)).status).toBe(404);
    expect((await post(api, `/webhook_endpoints/${id}/rotate_secret`, otherKey, {})).status).toBe(
      404,
    );
    expect((await getJson(api, `/webhook_endpoints/${id}/deliveries`, otherKey)).status).toBe(404);
    expect((await getJson(api, '/webhook_endpoints', otherKey)).json.data).toEqual([]);
    expect((await getJson(api, '/webhook_endpoints/not-a-uuid', apiKey)).status).toBe(404);
    const got = await getJson(api, `/webhook_endpoints/${id}`, apiKey);
    const { secret: _secret, ...resource } = created.json;
    expect(got.json).toEqual(resource);
    const secrets = await db.pool.query(
      'SELECT 1 FROM webhook_endpoint_secrets WHERE endpoint_id = $1',
      [id],
    );
    expect(secrets.rowCount).toBe(1);
    await deleteAll();
  });

  it('when patched, then the fields change; disabled by the merchant and re-enabled clears the reason and failing_since', async () => {
    const created = await post(api, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:9/',
      enabled_events: ['*'],
    });
    const id = created.json.id as string;
    const changed = await send(api, 'PATCH', `/webhook_endpoints/${id}`, apiKey, {
      url: 'http://127.0.0.1:10/new',
      enabled_events: ['payment.failed'],
      description: 'new',
      disabled: true,
    });
    expect(changed.status).toBe(200);
    expect(changed.json).toMatchObject({
      url: 'http://127.0.0.1:10/new',
      enabled_events: ['payment.failed'],
      description: 'new',
      disabled: true,
      disabled_reason: 'merchant',
      disabled_at: expect.stringMatching(/Z$/) as unknown,
    });
    const bad = await send(api, 'PATCH', `/webhook_endpoints/${id}`, apiKey, {
      enabled_events: [],
    });
    expect(bad.status).toBe(400);
    await db.pool.query(`UPDATE webhook_endpoints SET failing_since = now() WHERE id = $1`, [id]);
    const enabled = await send(api, 'PATCH', `/webhook_endpoints/${id}`, apiKey, {
      disabled: false,
      description: null,
    });
    expect(enabled.json).toMatchObject({
      url: 'http://127.0.0.1:10/new',
      enabled_events: ['payment.failed'],
      description: null,
      disabled: false,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
    });
    const deleted = await send(api, 'DELETE', `/webhook_endpoints/${id}`, apiKey);
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ id, object: 'webhook_endpoint', deleted: true });
    expect((await getJson(api, `/webhook_endpoints/${id}`, apiKey)).status).toBe(404);
    expect((await counts()).secrets).toBe(0);
  });

  it('when the secret is rotated, then the new one is current and the old one signs until its expiry; expired ones are pruned', async () => {
    const created = await post(api, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:9/',
      enabled_events: ['*'],
    });
    const id = created.json.id as string;
    const before = Date.now();
    const rotated = await post(api, `/webhook_endpoints/${id}/rotate_secret`, apiKey, {
      expires_in_seconds: 3600,
    });
    expect(rotated.status).toBe(200);
    // A bad body is refused before anything changes.
    for (const bad of [{ expires_in_seconds: -1 }, { expires_in_seconds: 1.5 }, { grace: 1 }]) {
      const refused = await post(api, `/webhook_endpoints/${id}/rotate_secret`, apiKey, bad);
      expect(refused.status).toBe(400);
      expect(refused.json.code).toBe('validation_failed');
    }
    expect(rotated.json.secret).toMatch(SECRET);
    expect(rotated.json.secret).not.toBe(created.json.secret);
    const expiresAt = Date.parse(rotated.json.previous_secret_expires_at as string);
    expect(expiresAt).toBeGreaterThan(before + 3_500_000);
    expect(expiresAt).toBeLessThan(Date.now() + 3_700_000);
    const secrets = async () =>
      (await storedWebhookSecrets(db.pool, id)).map(({ secret, expired }) => ({ secret, expired }));
    expect(await secrets()).toEqual([
      { secret: created.json.secret, expired: false },
      { secret: rotated.json.secret, expired: null },
    ]);
    // Rotating with no grace: the previous secret expires at once; the next rotation prunes it.
    const second = await post(api, `/webhook_endpoints/${id}/rotate_secret`, apiKey, {
      expires_in_seconds: 0,
    });
    expect(second.status).toBe(200);
    const third = await post(api, `/webhook_endpoints/${id}/rotate_secret`, apiKey, {});
    expect(third.status).toBe(200);
    // The first (an hour's grace) stays, the second expired at once and is gone, the third
    // signs for the default grace, the fourth is current.
    expect((await secrets()).map((s) => s.secret)).toEqual([
      created.json.secret,
      second.json.secret,
      third.json.secret,
    ]);
    const previous = Date.parse(third.json.previous_secret_expires_at as string);
    expect(previous).toBeGreaterThan(Date.now() + 86_000_000);
    await deleteAll();
  });

  it('when created disabled, then it says so with the reason merchant', async () => {
    const res = await post(api, '/webhook_endpoints', apiKey, {
      url: 'http://127.0.0.1:9/',
      enabled_events: ['refund.succeeded'],
      disabled: true,
    });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      disabled: true,
      disabled_reason: 'merchant',
      disabled_at: res.json.created_at,
    });
    const got = await getJson(api, `/webhook_endpoints/${res.json.id as string}`, apiKey);
    expect(got.json).toMatchObject({ disabled: true, disabled_reason: 'merchant' });
    await deleteAll();
  });
});
