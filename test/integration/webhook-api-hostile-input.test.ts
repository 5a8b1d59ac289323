import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { startTestApi, type Answer, type TestApi } from '../support/test-api.js';

// The webhook API against what the contract fuzzer sends (npm run fuzz, DESIGN 64): methods a
// path does not have, wrong media types, huge bodies, nulls, unicode, out-of-range numbers,
// bad cursors and ids. Every refusal is problem+json and writes nothing.

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let merchantId: string;
let endpointId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey, id: merchantId } = await api.merchant('Hostile input', BENCH_TIER.name));
  const created = await call('POST', '/webhook_endpoints', {
    body: JSON.stringify({ url: 'http://127.0.0.1:9/hooks', enabled_events: ['*'] }),
  });
  expect(created.status).toBe(201);
  endpointId = created.json.id as string;
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

interface CallOptions {
  /** Sent as bytes (a string as UTF-8), so fetch adds no Content-Type of its own. */
  body?: string | Uint8Array;
  contentType?: string | null;
  headers?: Record<string, string>;
  auth?: boolean;
}

async function call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth !== false) headers.authorization = `Bearer ${apiKey}`;
  if (options.contentType !== null && options.body !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
  }
  const body = typeof options.body === 'string' ? Buffer.from(options.body) : options.body;
  const res = await fetch(api.url(path), { method, headers, body });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  if (text) json = JSON.parse(text) as Record<string, unknown>;
  return { status: res.status, headers: res.headers, text, json };
}

function expectProblem(res: Answer, status: number, code: string, what = ''): void {
  expect(res.status, `${what} ${res.text.slice(0, 300)}`).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.json).toMatchObject({
    type: `https://payments.example/problems/${code.replaceAll('_', '-')}`,
    status,
    code,
  });
}

/** Every table a webhook request may write, with each endpoint's url and secrets. */
async function snapshot(): Promise<unknown> {
  const { rows } = await db.pool.query(
    `SELECT (SELECT json_agg(w ORDER BY id) FROM webhook_endpoints w) AS endpoints,
            (SELECT json_agg(s ORDER BY endpoint_id, created_at) FROM webhook_endpoint_secrets s) AS secrets,
            (SELECT count(*)::int FROM webhook_deliveries) AS deliveries,
            (SELECT count(*)::int FROM webhook_delivery_jobs) AS jobs,
            (SELECT count(*)::int FROM idempotency_keys) AS keys`,
  );
  return rows[0];
}

const replayPath = () => `/webhook_endpoints/${endpointId}/replay`;

describe('the webhook API under hostile input', () => {
  it('when a path gets a method it does not have, then 405 problem+json with Allow, before authentication, writing nothing', async () => {
    const before = await snapshot();
    const delivery = `/webhook_endpoints/${endpointId}/deliveries/${randomUUID()}`;
    const cases: [string, string, string][] = [
      ['PUT', '/webhook_endpoints', 'GET, HEAD, POST'],
      ['DELETE', '/webhook_endpoints', 'GET, HEAD, POST'],
      ['POST', `/webhook_endpoints/${endpointId}`, 'GET, HEAD, PATCH, DELETE'],
      ['PUT', `/webhook_endpoints/${endpointId}`, 'GET, HEAD, PATCH, DELETE'],
      ['GET', `/webhook_endpoints/${endpointId}/rotate_secret`, 'POST'],
      ['POST', `/webhook_endpoints/${endpointId}/deliveries`, 'GET, HEAD'],
      ['PATCH', delivery, 'GET, HEAD'],
      ['GET', `${delivery}/retry`, 'POST'],
      ['DELETE', replayPath(), 'POST'],
      ['OPTIONS', '/webhook_endpoints/not-a-uuid/replay', 'POST'],
    ];
    for (const [method, path, allow] of cases) {
      for (const auth of [true, false]) {
        const body = JSON.stringify({ url: 'http://127.0.0.1:9/x', enabled_events: ['*'] });
        const res = await call(method, path, { auth, ...(method === 'GET' ? {} : { body }) });
        expectProblem(res, 405, 'method_not_allowed', `${method} ${path}`);
        expect(res.headers.get('allow')).toBe(allow);
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it('when a body is huge, not JSON by its type, or sent with an empty Idempotency-Key, then 413, 415 or 400 and nothing is written', async () => {
    const before = await snapshot();
    const valid = JSON.stringify({ url: 'http://127.0.0.1:9/x', enabled_events: ['*'] });
    const huge = JSON.stringify({ url: 'http://127.0.0.1:9/x', description: 'x'.repeat(2 ** 21) });
    const rotate = `/webhook_endpoints/${endpointId}/rotate_secret`;
    const since = JSON.stringify({ since: '2020-01-01T00:00:00Z' });
    const key = { 'idempotency-key': randomUUID() };
    const cases: [string, string, CallOptions, number, string][] = [
      ['POST', '/webhook_endpoints', { body: huge }, 413, 'payload_too_large'],
      ['PATCH', `/webhook_endpoints/${endpointId}`, { body: huge }, 413, 'payload_too_large'],
      ['POST', replayPath(), { body: huge, headers: key }, 413, 'payload_too_large'],
      ['POST', '/webhook_endpoints', { body: valid, contentType: 'text/plain' }, 415, ''],
      ['POST', '/webhook_endpoints', { body: valid, contentType: null }, 415, ''],
      [
        'POST',
        '/webhook_endpoints',
        { body: valid, contentType: 'application/json; charset=latin1' },
        415,
        '',
      ],
      [
        'PATCH',
        `/webhook_endpoints/${endpointId}`,
        { body: '{}', contentType: 'text/plain' },
        415,
        '',
      ],
      ['POST', rotate, { body: '{}', contentType: 'text/plain' }, 415, ''],
      ['POST', rotate, { body: '{}', contentType: null }, 415, ''],
      ['POST', replayPath(), { body: since, contentType: 'text/xml', headers: key }, 415, ''],
      [
        'POST',
        '/webhook_endpoints',
        { body: valid, headers: { 'idempotency-key': '' } },
        400,
        'idempotency_key_invalid',
      ],
      ['POST', '/webhook_endpoints', { body: '' }, 400, 'malformed_json'],
      ['POST', '/webhook_endpoints', { body: '{"url":' }, 400, 'malformed_json'],
      ['POST', rotate, { body: new Uint8Array([0x7b, 0xff, 0x7d]) }, 400, 'invalid_encoding'],
    ];
    for (const [method, path, options, status, code] of cases) {
      const res = await call(method, path, options);
      expectProblem(res, status, code || 'unsupported_media_type', `${method} ${path}`);
    }
    expect(await snapshot()).toEqual(before);
  });

  it('when fields are null, extra, of the wrong type, out of range or hostile unicode, then 400 or 422 naming them and nothing is written', async () => {
    const before = await snapshot();
    const url = 'http://127.0.0.1:9/x';
    const create: [unknown, number, string][] = [
      [null, 400, '(body)'],
      [[], 400, '(body)'],
      [{ url: null, enabled_events: ['*'] }, 400, 'url'],
      [{ url, enabled_events: null }, 400, 'enabled_events'],
      [{ url, enabled_events: ['*', '*'] }, 400, 'enabled_events'],
      [{ url, enabled_events: ['payment.failed', 'payment.failed'] }, 400, 'enabled_events'],
      [{ url, enabled_events: ['*'], description: null }, 400, 'description'],
      [{ url, enabled_events: ['*'], description: 'a\u0000b' }, 400, 'description'],
      [{ url, enabled_events: ['*'], id: randomUUID() }, 400, 'id'],
      [{ url: 'http://127.0.0.1:9/a\u0000b', enabled_events: ['*'] }, 422, 'url'],
      [{ url: 'http://127.0.0.1:9/a b', enabled_events: ['*'] }, 422, 'url'],
      [{ url: 'http://127.0.0.1:9/\u0085', enabled_events: ['*'] }, 422, 'url'],
      [{ url: 'http://127.0.0.1:9/\ud800', enabled_events: ['*'] }, 422, 'url'],
      [{ url: ' http://127.0.0.1:9/', enabled_events: ['*'] }, 422, 'url'],
      [{ url: 'javascript:alert(1)', enabled_events: ['*'] }, 422, 'url'],
    ];
    for (const [body, status, path] of create) {
      const res = await call('POST', '/webhook_endpoints', { body: JSON.stringify(body) });
      expectProblem(res, status, status === 400 ? 'validation_failed' : 'webhook_url_not_allowed');
      expect((res.json.errors as { path: string }[]).map((e) => e.path)).toContain(path);
    }
    const patch = `/webhook_endpoints/${endpointId}`;
    for (const body of ['{"url":null}', '{"disabled":null}', '{"enabled_events":[]}']) {
      expectProblem(await call('PATCH', patch, { body }), 400, 'validation_failed', body);
    }
    const rotate = `/webhook_endpoints/${endpointId}/rotate_secret`;
    for (const body of [
      '{"expires_in_seconds":-1}',
      '{"expires_in_seconds":1e400}',
      '{"expires_in_seconds":2592001}',
      '{"expires_in_seconds":1.5}',
      '{"expires_in_seconds":null}',
      '{"expires_in_seconds":"60"}',
    ]) {
      const res = await call('POST', rotate, { body });
      expectProblem(res, 400, 'validation_failed', body);
      expect(res.json.errors).toEqual([
        { path: 'expires_in_seconds', message: expect.any(String) as unknown },
      ]);
    }
    expect(await snapshot()).toEqual(before);
  });

  it('when a cursor, limit, status or path id is malformed or unknown, then 400 or 404 problem+json', async () => {
    const before = await snapshot();
    const deliveries = `/webhook_endpoints/${endpointId}/deliveries`;
    const bad: [string, number, string][] = [
      ['/webhook_endpoints?starting_after=not-a-uuid', 400, 'validation_failed'],
      [`/webhook_endpoints?starting_after=${randomUUID()}`, 400, 'validation_failed'],
      ['/webhook_endpoints?limit=-1', 400, 'validation_failed'],
      ['/webhook_endpoints?limit=99999999999999999999999', 400, 'validation_failed'],
      ['/webhook_endpoints?limit=1e2', 400, 'validation_failed'],
      ['/webhook_endpoints?limit=1&limit=2', 400, 'validation_failed'],
      ['/webhook_endpoints?cursor=x', 400, 'validation_failed'],
      [`${deliveries}?starting_after=${randomUUID()}`, 400, 'validation_failed'],
      [`${deliveries}?starting_after=%00`, 400, 'validation_failed'],
      [`${deliveries}?status=sent`, 400, 'validation_failed'],
      ['/webhook_endpoints/not-a-uuid', 404, 'not_found'],
      ['/webhook_endpoints/%ZZ', 404, 'not_found'],
      [`/webhook_endpoints/${randomUUID()}/deliveries`, 404, 'not_found'],
      [`${deliveries}/${'f'.repeat(36)}`, 404, 'not_found'],
    ];
    for (const [path, status, code] of bad) {
      expectProblem(await call('GET', path), status, code, path);
    }
    for (const [method, path] of [
      ['PATCH', '/webhook_endpoints/not-a-uuid'],
      ['DELETE', '/webhook_endpoints/%E2%82%AC'],
      ['POST', '/webhook_endpoints/00000000-0000-0000-0000-00000000000g/rotate_secret'],
      ['POST', `${deliveries}/not-a-uuid/retry`],
      ['POST', '/webhook_endpoints/not-a-uuid/replay'],
    ] as const) {
      const res = await call(method, path, {
        body: JSON.stringify(method === 'PATCH' ? {} : { since: '2020-01-01T00:00:00Z' }),
        headers: { 'idempotency-key': randomUUID() },
      });
      expectProblem(res, 404, 'not_found', `${method} ${path}`);
    }
    expect(await snapshot()).toEqual(before);
  });

  it('when a replay window is at the edges RFC 3339 allows, then it is read as the instants it names (never a 500); until not after since is 400', async () => {
    await db.pool.query(
      `INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
       VALUES ($1, $2, $3, 'payment.settled', '{}', '2020-01-01T00:00:00.1234Z')`,
      [randomUUID(), merchantId, randomUUID()],
    );
    const replay = (body: object) =>
      call('POST', replayPath(), {
        body: JSON.stringify(body),
        headers: { 'idempotency-key': randomUUID() },
      });
    const windows: [object, number][] = [
      [{ since: '0000-01-01T00:00:00Z' }, 1],
      [{ since: '0001-01-01T00:00:00+23:59', until: '9999-12-31T23:59:59-23:59' }, 1],
      [{ since: '2020-01-01T00:00:00.1234Z', until: '2020-01-01T00:00:00.12341Z' }, 1],
      [{ since: '2020-01-01T00:00:00.12341Z' }, 0],
      [{ since: '2020-01-01T23:59:00+23:59', until: '2020-01-01T00:00:00.1235Z' }, 1],
      [{ since: '9999-12-31T23:59:59-23:59' }, 0],
    ];
    for (const [body, replayed] of windows) {
      const res = await replay(body);
      expect(res.status, `${JSON.stringify(body)} ${res.text}`).toBe(202);
      expect(res.json).toMatchObject({ object: 'webhook_replay', replayed });
    }
    const before = await snapshot();
    for (const body of [
      { since: '2020-01-01T00:00:00.1234Z', until: '2020-01-01T00:00:00.1234Z' },
      { since: '2020-01-01T00:00:00.1235Z', until: '2020-01-01T00:00:00.1234999Z' },
      { since: '2020-01-01T01:00:00+01:00', until: '2020-01-01T00:00:00Z' },
      { since: '2020-02-30T00:00:00Z' },
      { since: '2020-01-01T00:00:00' },
    ]) {
      expectProblem(await replay(body), 400, 'validation_failed', JSON.stringify(body));
    }
    expect(await snapshot()).toEqual(before);
  });
});
