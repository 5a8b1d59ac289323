import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/apps/api/openapi.js';
import { responseCacheKey } from '../../src/idempotency/response-cache.js';
import { rateBucketKey } from '../../src/rate-limits/rate-limiter.js';
import { createApiKey } from '../../src/merchants/api-key-repository.js';
import { READ_ONLY_SCOPES, type Scope } from '../../src/merchants/api-key-scopes.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { send, startTestApi, type Answer, type TestApi } from '../support/test-api.js';

// Restricted keys (issue 38, DESIGN 115) against the real API logged in as payments_api: every
// operation of the OpenAPI document is walked with a read-only key, on resources that exist, so
// a write the gate let through would succeed and show in the tables.

let db: TestDatabase;
let api: TestApi;
let merchantId: string;
let secretKey: string;
const ids = { payment: '', refund: '', endpoint: '', delivery: '', event: '' };

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' });
  await defineTier(db.pool, BENCH_TIER);
  ({ id: merchantId, apiKey: secretKey } = await api.merchant('Scoped', BENCH_TIER.name));
  // Every resource a path can name, made with the merchant's secret key (or seeded as the
  // fan-out would write them).
  ids.payment = await settledPayment(api, db, secretKey, { amount: 1000 });
  const refund = await postRefund(api, {
    apiKey: secretKey,
    paymentId: ids.payment,
    body: { amount: 100 },
  });
  expect(refund.status).toBe(202);
  ids.refund = refund.json.id as string;
  ids.event = paymentEventId(ids.payment, 'payment.created');
  const endpoint = await post('/webhook_endpoints', secretKey, {
    url: 'http://127.0.0.1:9/hooks',
    enabled_events: ['*'],
  });
  expect(endpoint.status).toBe(201);
  ids.endpoint = endpoint.json.id as string;
  ids.delivery = await seedFailedDelivery(ids.endpoint);
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

/** A valid request for each writing operation: let through, it would write. */
const WRITES: Record<string, { body?: unknown; idempotencyKey?: boolean }> = {
  createPayment: { body: { amount: 500, currency: 'EUR' }, idempotencyKey: true },
  createRefund: { body: { amount: 100 }, idempotencyKey: true },
  capturePayment: { body: {}, idempotencyKey: true },
  cancelPayment: { body: {}, idempotencyKey: true },
  createWebhookEndpoint: {
    body: { url: 'http://127.0.0.1:9/other', enabled_events: ['*'] },
    idempotencyKey: true,
  },
  updateWebhookEndpoint: { body: { description: 'changed' } },
  deleteWebhookEndpoint: {},
  rotateWebhookSecret: { body: {} },
  retryWebhookDelivery: {},
  replayWebhookEvents: {
    body: { since: new Date(Date.now() - 3_600_000).toISOString() },
    idempotencyKey: true,
  },
};

interface Operation {
  path: string;
  method: string;
  operationId: string;
  scope: Scope;
}

/** Every operation of the document the API serves, with its stated scope. */
function operations(): Operation[] {
  const doc = buildOpenApiDocument() as {
    paths: Record<string, Record<string, { operationId: string; 'x-required-scope': Scope }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      path,
      method: method.toUpperCase(),
      operationId: op.operationId,
      scope: op['x-required-scope'],
    })),
  );
}

/** The path with the ids of the resources made in beforeAll. */
function concrete(path: string): string {
  const id = path.startsWith('/webhook_endpoints')
    ? ids.endpoint
    : path.startsWith('/refunds')
      ? ids.refund
      : path.startsWith('/events')
        ? ids.event
        : ids.payment;
  return path.replace('{id}', id).replace('{delivery_id}', ids.delivery);
}

async function post(path: string, key: string, body: unknown, idem?: string): Promise<Answer> {
  return request('POST', path, key, body, idem);
}

async function request(
  method: string,
  path: string,
  key: string,
  body?: unknown,
  idem?: string,
): Promise<Answer> {
  if (idem === undefined) return send(api, method, path, key, body);
  const res = await fetch(api.url(path), {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': idem,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as never };
}

/** Every table's row count and a hash of its rows: any insert, update or delete changes it. */
async function snapshot(): Promise<Record<string, string>> {
  const { rows: tables } = await db.pool.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables
      WHERE schemaname = 'public' AND tablename <> 'pgmigrations' ORDER BY 1`,
  );
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await db.pool.query<{ n: number; h: string }>(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS h
         FROM "${name}" t`,
    );
    out[name] = `${rows[0]?.n}:${rows[0]?.h}`;
  }
  return out;
}

function expectRefused(res: Answer, scope: string): void {
  expect(res.status, res.text).toBe(403);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(res.json).toMatchObject({ status: 403, code: 'insufficient_scope' });
  expect(res.json.detail).toContain(scope);
  expect(res.headers.get('www-authenticate')).toBe(
    `Bearer error="insufficient_scope", scope="${scope}"`,
  );
}

describe('restricted API keys', () => {
  it('when a read-only key walks every operation of the OpenAPI document, then every read is 200 and every write 403 insufficient_scope with nothing written', async () => {
    const readOnly = await createApiKey(db.pool, merchantId, { scopes: READ_ONLY_SCOPES });
    expect(readOnly.apiKey).toMatch(/^rk_[A-Za-z0-9_-]{43}$/);
    const ops = operations();
    const writes = ops.filter((op) => op.method !== 'GET');
    // A new writing operation must be given a request here, or the walk would skip it.
    expect(writes.map((op) => op.operationId).sort()).toEqual(Object.keys(WRITES).sort());
    expect(ops.length - writes.length).toBeGreaterThanOrEqual(8);

    for (const op of ops.filter((o) => o.method === 'GET')) {
      const res = await request('GET', concrete(op.path), readOnly.apiKey);
      expect(res.status, `${op.operationId}: ${res.text}`).toBe(200);
      expect(op.scope).toMatch(/:read$/);
    }

    const before = await snapshot();
    const idempotencyKeys: string[] = [];
    for (const op of writes) {
      const write = WRITES[op.operationId] ?? {};
      const idem = write.idempotencyKey ? randomUUID() : undefined;
      if (idem !== undefined) idempotencyKeys.push(idem);
      const res = await request(op.method, concrete(op.path), readOnly.apiKey, write.body, idem);
      expectRefused(res, op.scope);
      expect(op.scope).toMatch(/:write$/);
    }
    expect(await snapshot()).toEqual(before);
    for (const key of idempotencyKeys) {
      const cached = responseCacheKey(api.platform.config.REDIS_KEY_PREFIX, merchantId, key);
      expect(await api.platform.redis.exists(cached)).toBe(0);
    }
    // The same requests with the secret key are served (the walk refused writes that would work).
    const created = await post('/payments', secretKey, WRITES.createPayment?.body, randomUUID());
    expect(created.status).toBe(202);
  });

  it('when a key holds only payments:write, then it creates and reads payments but is refused refunds, webhooks and events', async () => {
    const { apiKey } = await createApiKey(db.pool, merchantId, { scopes: ['payments:write'] });
    const created = await post('/payments', apiKey, { amount: 700, currency: 'EUR' }, randomUUID());
    expect(created.status, created.text).toBe(202);
    expect((await request('GET', `/payments/${created.json.id as string}`, apiKey)).status).toBe(
      200,
    );
    expect((await request('GET', '/payments', apiKey)).status).toBe(200);

    const before = await snapshot();
    expectRefused(
      await postRefund(api, { apiKey, paymentId: ids.payment, body: { amount: 100 } }),
      'refunds:write',
    );
    expectRefused(await request('GET', `/payments/${ids.payment}/refunds`, apiKey), 'refunds:read');
    expectRefused(await request('GET', `/refunds/${ids.refund}`, apiKey), 'refunds:read');
    expectRefused(await request('GET', '/webhook_endpoints', apiKey), 'webhooks:read');
    expectRefused(await request('GET', '/events', apiKey), 'events:read');
    expectRefused(await request('GET', `/events/${ids.event}`, apiKey), 'events:read');
    expect(await snapshot()).toEqual(before);
  });

  it('when a restricted key is refused, then no Redis command ran for it: its merchant has no rate-limit bucket until a request is allowed', async () => {
    // A slow tier: one spent token takes a second to come back, so the bucket key lives that
    // long (a full bucket's key expires at once).
    const slow = { name: 'scoped-slow', ratePerSecond: 1, burst: 100 };
    await defineTier(db.pool, slow);
    const other = await api.merchant('Refused only', slow.name);
    const { apiKey } = await createApiKey(db.pool, other.id, { scopes: READ_ONLY_SCOPES });
    const bucket = rateBucketKey(
      api.platform.config.REDIS_KEY_PREFIX,
      'merchant',
      slow.name,
      other.id,
    );
    expectRefused(
      await post('/payments', apiKey, { amount: 500, currency: 'EUR' }, randomUUID()),
      'payments:write',
    );
    expectRefused(
      await post('/webhook_endpoints', apiKey, {
        url: 'http://127.0.0.1:9/',
        enabled_events: ['*'],
      }),
      'webhooks:write',
    );
    expect(await api.platform.redis.exists(bucket)).toBe(0);
    // Control: an allowed request spends from that very bucket.
    expect((await request('GET', '/payments', apiKey)).status).toBe(200);
    expect(await api.platform.redis.exists(bucket)).toBe(1);
  });
});

/** A failed delivery of a stored event to the endpoint, as the delivery worker leaves one. */
async function seedFailedDelivery(endpointId: string): Promise<string> {
  const eventId = randomUUID();
  await db.pool.query(
    `INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
     VALUES ($1, $2, $3, 'payment.settled', '{}', now() - interval '10 minutes')`,
    [eventId, merchantId, ids.payment],
  );
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id, status, attempts,
       failed_reason, created_at)
     VALUES ($1, $2, $3, 'failed', 2, 'attempts_exhausted', now() - interval '10 minutes')
     RETURNING id`,
    [endpointId, eventId, ids.payment],
  );
  const id = rows[0]?.id;
  if (!id) throw new Error('no delivery');
  return id;
}
